/**
 * @gmg/sdk: the TypeScript client of the generative media gateway. No runtime dependencies: it needs only the
 * global `fetch` (Node 20+, browsers, Deno, Bun). See packages/sdk/README.md and docs/sdk.md.
 */
export { GatewayClient, taskIdOf } from './client.js';
export type { ArtgenButtonRequest, GatewayClientOptions, MessagesApi, MessagesOptions, MessagesResponse, UploadInput } from './client.js';
export type { RequestOptions, TransportOptions } from './http.js';
export { nextPollDelay, waitForTask } from './wait.js';
export type { PollDelayInput, WaitOptions } from './wait.js';
export * from './errors.js';
export type * from './types.js';
export type * from './generated/models.js';
export { ARTGEN_PATHS } from './generated/models.js';
