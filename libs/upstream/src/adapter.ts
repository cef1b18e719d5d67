import type { NormalizedRequest, TaskResult } from '@gmg/contracts';
import type { ProtocolTranslation, Unsupported } from './translation';

export type { Unsupported } from './translation';

/**
 * A channel's protocol settings (`settings` in the management API). Common to every protocol: `headers` (extra
 * headers on every vendor call, e.g. an organisation id; never the auth header, which comes from the key) and
 * `body` (fixed extra body parameters, merged under the translated body: the translation wins on a clash), and the
 * overrides of channel-overrides.ts: `proxy`, `timeouts`, `status_map`. Anything else is a protocol option its adapter declares and checks (`checkSettings`).
 */
export interface ChannelSettings {
  headers?: Record<string, string>;
  body?: Record<string, unknown>;
  /** An outbound HTTP(S) proxy URL (its credentials are a secret: redacted in every answer). */
  proxy?: string;
  timeouts?: {
    /** TCP (and TLS) connect, to the vendor or to the proxy. */
    connect_ms?: number;
    /** Task protocols: a submit or cancel call, connect to last byte. Chat: time to the answer's headers (a stream's first byte). */
    request_ms?: number;
    /** Task protocols: one poll call. */
    poll_ms?: number;
  };
  /** A vendor status (`429`) or class (`5xx`) → `retry`, `failover` or `fail`. */
  status_map?: Record<string, 'retry' | 'failover' | 'fail'>;
  [option: string]: unknown;
}

/** Settings every protocol takes: `headers`, `body` and the transport and failure overrides (channel-overrides.ts). */
export const COMMON_SETTINGS: readonly string[] = ['headers', 'body', 'proxy', 'timeouts', 'status_map'];

/**
 * The part of `checkSettings` every protocol shares: a key other than `headers`, `body` and the protocol's own
 * `options` is refused, and so is a fixed body parameter the protocol sets itself or cannot honour (`reserved`).
 */
export function commonSettingsProblem(
  protocol: string,
  settings: Readonly<ChannelSettings>,
  o: { options?: readonly string[]; reserved?: readonly string[]; reservedWhy?: string } = {},
): Unsupported | undefined {
  const known = [...COMMON_SETTINGS, ...(o.options ?? [])];
  const unknown = Object.keys(settings).find((k) => !known.includes(k));
  if (unknown)
    return { field: unknown, message: `\`${unknown}\` is not a setting of the ${protocol} protocol (${known.join(', ')}; a region is the channel's base_url)` };
  const reserved = (o.reserved ?? []).find((k) => settings.body !== undefined && k in settings.body);
  if (reserved)
    return {
      field: `body.${reserved}`,
      message: `\`${reserved}\` is refused in a ${protocol} channel's body: ${o.reservedWhy ?? 'the protocol sets it itself'}`,
    };
  return undefined;
}

/** The channel setting of protocols that take callbacks: `callbacks: false` keeps that channel on polls alone. */
export const CALLBACKS_SETTING = 'callbacks';

/** The `callbacks` setting's problem, if any (a boolean or absent). */
export function callbacksSettingProblem(settings: Readonly<ChannelSettings>): Unsupported | undefined {
  const v = settings[CALLBACKS_SETTING];
  return v === undefined || typeof v === 'boolean'
    ? undefined
    : { field: CALLBACKS_SETTING, message: '`callbacks` must be a boolean (false: the vendor is not given a callback URL, the task is polled)' };
}

/** What an adapter needs to reach one channel. The api key is a secret: never log it, never put it in job data. */
export interface ChannelTarget {
  id: string;
  name: string;
  protocol: string;
  baseUrl: string;
  apiKey: string;
  /** The channel key `apiKey` is (channel_keys); absent: the channel's own one key. Adapters do not read it. */
  keyId?: string;
  /** Public model id → the vendor's model or endpoint id; a model not named goes upstream under its own name. */
  modelMap: Readonly<Record<string, string>>;
  settings: Readonly<ChannelSettings>;
}

/** A channel as read with its secret (structurally @gmg/db's ChannelWithSecret): the one mapping to a target. */
export interface ChannelRow {
  id: string;
  name: string;
  protocol: string;
  baseUrl: string;
  apiKey: string;
  modelMap?: Record<string, string>;
  settings?: Record<string, unknown>;
}

export const channelTarget = (c: ChannelRow): ChannelTarget => ({
  id: c.id,
  name: c.name,
  protocol: c.protocol,
  baseUrl: c.baseUrl,
  apiKey: c.apiKey,
  modelMap: c.modelMap ?? {},
  settings: (c.settings ?? {}) as ChannelSettings,
});

/** The vendor's name for the request's model on this channel: the map by the name the client sent, then by ours. */
export const upstreamModelOf = (ch: Pick<ChannelTarget, 'modelMap'>, req: Pick<NormalizedRequest, 'model' | 'requestedModel'>): string =>
  ch.modelMap[req.requestedModel] ?? ch.modelMap[req.model] ?? req.model;

export type UpstreamStatus = 'pending' | 'processing' | 'completed' | 'failed';

/**
 * A finished task's file that the gateway keeps in its result store and serves from a link it signs: the vendor
 * answered it inline (base64), with a link that dies sooner than the spec's, or behind the channel's key.
 */
export interface UpstreamMedia {
  kind: 'image' | 'video';
  /**
   * A link to download (`headers`: what the download needs, e.g. the channel's key; never logged, never stored), or
   * the bytes inline. A link on the channel's own host is trusted as the channel is; any other host must be public.
   */
  source: { url: string; headers?: Record<string, string> } | { base64: string };
  width?: number;
  height?: number;
  durationSeconds?: number;
}

export interface UpstreamPoll {
  status: UpstreamStatus;
  /** Integer 0..100. */
  progress: number;
  result?: TaskResult;
  /**
   * Set on a completed poll whose files the gateway keeps (vendor protocols): the task's result lists our links for
   * them, in this order, as `result.images` or `result.videos` (merged into `result`, which may carry other fields).
   */
  media?: UpstreamMedia[];
  /**
   * Files kept like `media` (only with it) that are not result items but named by the native view (the art suite's
   * `grid_image_url`): the gateway keeps each and writes our link into `native[key]`.
   */
  nativeMedia?: Record<string, UpstreamMedia>;
  /** Set when status is `failed`. `moderation` marks a content-moderation refusal (final, no failover). */
  error?: { message: string; type?: string; moderation?: boolean };
  /**
   * The upstream's own view of the task when it says more than the unified status (the art suite's native shape:
   * status incl. MODAL, action, grid, URLs, description). Stored with the task as-is. Optional, additive.
   */
  native?: Record<string, unknown>;
}

export interface SubmitContext {
  /** Our task id; sent as the idempotency key so a resubmit after a crash does not create a second upstream task. */
  taskId: string;
  /**
   * Set when vendor callbacks are on (UPSTREAM_CALLBACK_BASE_URL) and the adapter declares `callbacks`: the task's
   * signed callback URL on the edge, sent the way the vendor documents it (a webhook or `callback_url`). A callback
   * only nudges the task's next poll; nothing is read from it.
   */
  callbackUrl?: string;
}

/**
 * What a submit left. `done`: a synchronous vendor call (OpenAI-compatible images) answered the finished task at
 * once; the step machine treats it as that task's first poll (keeps its media, completes or fails it).
 */
export interface SubmitOutcome {
  upstreamTaskId: string;
  done?: UpstreamPoll;
}

/**
 * One upstream protocol. Failures are thrown as `UpstreamError` (@gmg/errors) with `retryable` set;
 * anything else thrown is a bug.
 */
export interface UpstreamAdapter {
  readonly protocol: string;
  /** The declared field table (vendor protocols): what `check` enforces and docs/upstreams.md shows. */
  readonly translation?: ProtocolTranslation;
  /**
   * The vendor calls back when a task ends (issue 35 item 8): `submit` sends `SubmitContext.callbackUrl` when given,
   * and such a task polls at the slower safety-net cadence. A channel turns it off with `settings.callbacks: false`.
   */
  readonly callbacks?: boolean;
  /**
   * Pure: the first field of the request this protocol cannot carry on this channel, or undefined. Checked at the
   * edge before any money moves (another eligible channel may be chosen instead) and again by the worker.
   * Absent: the protocol carries every request (the gateway protocol forwards our own API).
   */
  check?(ch: ChannelTarget, req: NormalizedRequest): Unsupported | undefined;
  /** Pure: the first problem of a channel's `settings` for this protocol (`field` relative to `settings`). */
  checkSettings?(settings: Readonly<ChannelSettings>): Unsupported | undefined;
  submit(ch: ChannelTarget, req: NormalizedRequest, ctx: SubmitContext): Promise<SubmitOutcome>;
  /**
   * `req` (optional, additive): what the task is (its pool and model), for protocols that poll different paths per
   * kind of task. Never the request body: a poll does not read it.
   */
  poll(ch: ChannelTarget, upstreamTaskId: string, req?: Pick<NormalizedRequest, 'pool' | 'model'>): Promise<UpstreamPoll>;
  /**
   * Optional (protocols that can stop a task): tell the upstream the task was cancelled here. Best effort: the
   * task is already failed and refunded on our side whatever this answers; a 409 (already ended) is not an error.
   */
  cancel?(ch: ChannelTarget, upstreamTaskId: string, req?: Pick<NormalizedRequest, 'pool' | 'model'>): Promise<void>;
}

export interface AdapterRegistry {
  /** The adapter of a protocol, or undefined when none is registered (a misconfigured channel). */
  getAdapter(protocol: string): UpstreamAdapter | undefined;
  protocols(): string[];
}

/** Adding a vendor protocol = one adapter folder plus one entry in `createUpstreamAdapters` (adapters.ts). */
export function createAdapterRegistry(adapters: readonly UpstreamAdapter[]): AdapterRegistry {
  const byProtocol = new Map<string, UpstreamAdapter>();
  for (const a of adapters) {
    if (byProtocol.has(a.protocol)) throw new Error(`two upstream adapters for protocol "${a.protocol}"`);
    byProtocol.set(a.protocol, a);
  }
  return {
    getAdapter: (protocol) => byProtocol.get(protocol),
    protocols: () => [...byProtocol.keys()],
  };
}
