import type { Pool } from '../queues';
import type { ErrorType } from '../error-types';

export type Category = 'chat' | 'image' | 'video' | 'audio' | 'unknown';
export type Operation = 'image_generation' | 'video_generation';
/** Acknowledgement shapes of spec 2.1 (artgen has its own, see the art suite). */
export type AckShape = 'A' | 'B' | 'C' | 'artgen';

/** A JSON Schema (draft 2020-12) document or sub-schema. */
export type JsonSchema = { [k: string]: unknown };

/** One billed dimension: the first price key found in the price table wins (most specific first). */
export interface BillingItem {
  /** Candidate price keys, most specific first, e.g. ['lumen-2-pro@1MP', 'lumen-2-pro']. */
  keys: string[];
  /** Multiplier: images, seconds, batch size… */
  quantity: number;
  /** Human label for logs/ledger, e.g. '1 image at 1MP'. */
  label: string;
}

/** What the upstream is asked to produce; the simulator and the e2e tests check results against it. */
export interface ExpectedOutput {
  kind: 'images' | 'videos' | 'assets' | 'text';
  count: number;
  width?: number;
  height?: number;
  /** jpeg | png | webp | mp4 */
  format?: string;
  durationSeconds?: number;
}

/** The result of validating and normalizing one request body against a model's contract. */
export interface NormalizedRequest {
  /** Canonical model id (aliases resolved). */
  model: string;
  /** The model name the client sent (may be an alias); echoed where the spec echoes it. */
  requestedModel: string;
  pool: Pool;
  /**
   * The body to send to an upstream that speaks this same API: validated, defaults filled in, server-side
   * rewrites applied (e.g. kinetic `<<<image_1>>>`). Never contains secrets.
   */
  upstreamBody: Record<string, unknown>;
  /** Derived facts: mode, output dimensions, tier... (model specific, JSON-serializable). */
  derived: Record<string, unknown>;
  billing: BillingItem[];
  expected: ExpectedOutput;
  /**
   * Set by the edge (never by a contract) when the request continues something that lives on one upstream
   * channel only — a pixel-v6 extension, an art-suite follow-up, an avatar asset: the worker submits to that
   * channel alone, and the edge has already rewritten the reference in `upstreamBody` to the upstream's own id.
   * Optional: added after the first release.
   */
  pinnedChannelId?: string;
  /**
   * The upstream path to submit to, when the contract's endpoint is not it (the art suite has one path per
   * action). Optional: added with the art suite; the gateway adapter prefers it over the contract endpoint.
   */
  upstreamPath?: string;
}

/** A request that breaks the contract: names the field and the rule. */
export interface ContractViolation {
  /** 400 for most; 422 for conflicting fields (spec 7). */
  status: 400 | 422;
  type: ErrorType;
  /** Dotted path of the offending field ('' for the body itself). */
  field: string;
  /** Short rule id, e.g. 'enum', 'max', 'required', 'together', 'exclusive', 'server:pixel-limit'. */
  rule: string;
  /** A message a person can act on: field, what was wrong, what is allowed. */
  message: string;
}

/** An http(s) media URL of a request (`field` as in violations, e.g. `image_urls.0`). */
export interface MediaUrlRef {
  field: string;
  url: string;
}

/**
 * `mediaUrls` (optional, added for host resolution at submit): the request's http(s) media URLs other than the
 * gateway's own links (`trustedUrlPrefixes`), which the edge resolves before accepting the request.
 */
export type ValidationOutcome = { ok: true; value: NormalizedRequest; mediaUrls?: readonly MediaUrlRef[] } | { ok: false; violation: ContractViolation };

/** Options of ModelContract.validate (additive). */
export interface ValidateOptions {
  /** Media URLs starting with one of these skip the public-address check (the gateway's own upload links). */
  trustedUrlPrefixes?: readonly string[];
  /**
   * Sizes of URL references the caller measured (added for lumen-2 `size: auto`): the edge knows its own uploads,
   * the simulator fetches any reference. A URL without an entry is not measured (Base64 is read from its header).
   */
  referenceSizes?: ReadonlyMap<string, { width: number; height: number }>;
}

export interface ModelContract {
  operation: Operation;
  method: 'POST';
  endpoint: string;
  /** A date; later versions only add fields. */
  schemaVersion: string;
  /** Contract origin for debugging: `model:<family>` or `base`. */
  source: string;
  ack: AckShape;
  /** Upstream poll cadence for tasks of this model. */
  pollIntervalMs: { min: number; max: number };
  /** Typical time to finish, seconds (shown as `estimated_time`). */
  estimatedSeconds: number;
  /** JSON Schema 2020-12 of the request body, derived from the same definition as the validator. */
  inputSchema: JsonSchema;
  /**
   * Rules JSON Schema cannot express, enforced only server-side (documented, listed per model).
   * Each entry: short id and one sentence.
   */
  serverRules: ReadonlyArray<{ id: string; description: string }>;
  /**
   * The largest request body accepted, in bytes as sent (413 above it), sized to the inline media the contract
   * accepts (BODY_CAPS). Published as `parameters.max_body_bytes`.
   */
  maxBodyBytes: number;
  /**
   * The inline media (Base64 / data URIs) of a validated body's media fields, with their dotted paths (`image_urls.2`):
   * the edge stores each once in the upload store and sends its URL instead. Empty when every media value is a URL.
   */
  inlineMedia(body: Record<string, unknown>): Array<{ field: string; value: string }>;
  /**
   * Joi-backed validation plus server-side rules plus normalization. Pure.
   * `opts` is optional (added later): trusted URL prefixes, e.g. the gateway's own upload links.
   */
  validate(body: unknown, requestedModel: string, opts?: ValidateOptions): ValidationOutcome;
}

export interface ModelDefinition {
  id: string;
  aliases: readonly string[];
  ownedBy: string;
  /** Unix seconds. */
  created: number;
  category: Exclude<Category, 'unknown'>;
  capabilityTags: readonly string[];
  supportedEndpointTypes: readonly string[];
  /** The worker pool that runs it; undefined for synchronous models (chat). */
  pool?: Pool;
  /** Image and video models have a contract; chat and audio do not (spec 4.1 rule 3). */
  contract?: ModelContract;
  /**
   * A model served on several paths, one contract each (the art suite: path action → contract). Optional: added
   * with the art suite; such a model has no single `contract`.
   */
  actionContracts?: Readonly<Record<string, ModelContract>>;
}
