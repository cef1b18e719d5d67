/**
 * @gmg/sdk: the TypeScript client of the generative media gateway. No runtime dependencies: it needs only the
 * global `fetch` (Node 20+, browsers, Deno, Bun). See packages/sdk/README.md and docs/sdk.md.
 * Everything exported here is the package's public API (`@public`: knip does not ask for a user inside the repo).
 */
/** @public */
export { GatewayClient, taskIdOf } from './client.js';
/** @public */
export type { ArtgenButtonRequest, ChatCompletionsApi, GatewayClientOptions, MessagesApi, MessagesOptions, MessagesResponse, UploadInput } from './client.js';
/** @public */
export type { RequestOptions, RetryInfo, TransportOptions } from './http.js';
/** @public */
export { nextPollDelay, waitForTask } from './wait.js';
/** @public */
export type { PollDelayInput, WaitOptions } from './wait.js';
/** @public */
export * from './errors.js';
/** @public */
export type * from './types.js';
/** @public */
export type * from './generated/models.js';
/** @public */
export { ARTGEN_PATHS } from './generated/models.js';
