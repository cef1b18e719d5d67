import { createAdapterRegistry, type AdapterRegistry, type ChannelSettings } from './adapter';
import type { Unsupported } from './translation';
import type { HostCheck } from './results/media-download';
import { createGatewayAdapter } from './gateway.adapter';
import { createArkAdapter } from './protocols/ark/ark.adapter';
import { createBflAdapter } from './protocols/bfl/bfl.adapter';
import { createDashScopeAdapter } from './protocols/dashscope/dashscope.adapter';
import { createKlingAdapter } from './protocols/kling/kling.adapter';
import { createMjProxyAdapter } from './protocols/mj-proxy/mj-proxy.adapter';
import type { QuadrantCutter } from './protocols/mj-proxy/mj-proxy.media';
import { createFalAdapter } from './protocols/fal/fal.adapter';
import { createGeminiAdapter } from './protocols/gemini/gemini.adapter';
import { createOpenAiMediaAdapter } from './protocols/openai/openai.adapter';
import { createReplicateAdapter } from './protocols/replicate/replicate.adapter';
import { createRunwayAdapter } from './protocols/runway/runway.adapter';

/** Task protocols, by the names a channel's `protocol` takes (`createUpstreamAdapters` registers exactly these). */
export const TASK_PROTOCOLS: readonly string[] = ['gateway', 'replicate', 'fal', 'openai', 'bfl', 'dashscope', 'kling', 'runway', 'gemini', 'ark', 'mj-proxy'];
/**
 * Protocols only chat channels take (the edge's chat path speaks them; no task adapter). `openai` is a task protocol
 * whose channels also serve the chat models they list by name (docs/upstreams/openai.md, "Chat").
 */
export const CHAT_PROTOCOLS: readonly string[] = ['messages'];

export interface UpstreamAdaptersOptions {
  /** Per vendor call of an asynchronous protocol (submit, poll, cancel), connect to last byte. */
  timeoutMs: number;
  /** Per synchronous generation call (OpenAI-compatible images: minutes at high quality). Default 5 min. */
  syncTimeoutMs?: number;
  /** The public-host filter for a request's images an adapter downloads itself (mj-proxy); default: the system resolver. */
  publicHosts?: HostCheck;
  /** The art worker's image cutter (mj-proxy grids without tile links); other processes never need it. */
  cutQuadrants?: QuadrantCutter;
}

/**
 * Every task protocol the gateway speaks, registered once: the workers submit and poll through it, the edge checks
 * a request against it before money moves and cancels through it. A new protocol is one folder under
 * `protocols/`, one line here and its name in TASK_PROTOCOLS.
 */
export function createUpstreamAdapters(opts: UpstreamAdaptersOptions): AdapterRegistry {
  const registry = createAdapterRegistry([
    createGatewayAdapter({ timeoutMs: opts.timeoutMs }),
    createReplicateAdapter({ timeoutMs: opts.timeoutMs }),
    createFalAdapter({ timeoutMs: opts.timeoutMs }),
    createOpenAiMediaAdapter({ timeoutMs: opts.timeoutMs, syncTimeoutMs: opts.syncTimeoutMs }),
    createBflAdapter({ timeoutMs: opts.timeoutMs }),
    createDashScopeAdapter({ timeoutMs: opts.timeoutMs }),
    createKlingAdapter({ timeoutMs: opts.timeoutMs }),
    createRunwayAdapter({ timeoutMs: opts.timeoutMs }),
    createGeminiAdapter({ timeoutMs: opts.timeoutMs }),
    createArkAdapter({ timeoutMs: opts.timeoutMs, syncTimeoutMs: opts.syncTimeoutMs }),
    createMjProxyAdapter({ timeoutMs: opts.timeoutMs, publicHosts: opts.publicHosts, cutQuadrants: opts.cutQuadrants }),
  ]);
  const registered = registry.protocols();
  if (registered.length !== TASK_PROTOCOLS.length || !TASK_PROTOCOLS.every((p) => registered.includes(p))) {
    throw new Error(`TASK_PROTOCOLS (${TASK_PROTOCOLS.join(', ')}) and the registered adapters (${registered.join(', ')}) differ`);
  }
  return registry;
}

let forChecks: AdapterRegistry | undefined;
/** The first problem of a channel's `settings` for its protocol (management API, 400 naming `settings.<field>`). */
export function checkChannelSettings(protocol: string, settings: Readonly<ChannelSettings>): Unsupported | undefined {
  forChecks ??= createUpstreamAdapters({ timeoutMs: 1000 });
  return forChecks.getAdapter(protocol)?.checkSettings?.(settings);
}
