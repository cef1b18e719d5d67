/**
 * The console's one way to the gateway: same-origin fetches with the signed-in credential, answers unwrapped from the
 * management envelope `{success, message, data}`; an error carries the envelope's `message` (shown in words).
 */

export type Role = 'operator' | 'customer';

export interface Session {
  role: Role;
  token: string;
}

const STORE = 'gmg-console-session';

/** The credential lives in sessionStorage only: gone when the tab closes, never in a cookie, the URL or localStorage. */
export const session = {
  read(): Session | null {
    const raw = sessionStorage.getItem(STORE);
    if (!raw) return null;
    try {
      const s = JSON.parse(raw) as Session;
      return (s.role === 'operator' || s.role === 'customer') && typeof s.token === 'string' ? s : null;
    } catch {
      return null;
    }
  },
  write(s: Session): void {
    sessionStorage.setItem(STORE, JSON.stringify(s));
  },
  clear(): void {
    sessionStorage.removeItem(STORE);
  },
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The spec's envelope: management routes answer `message`; the /v1 routes answer `error.message` on errors. */
interface Envelope<T> {
  success?: boolean;
  message?: string;
  data?: T;
  error?: { message?: string };
}

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  body?: unknown;
  headers?: Record<string, string>;
  token?: string;
}

/** Calls `path` (relative to the origin) and answers the envelope's `data`; throws ApiError with the server's words. */
export async function call<T>(path: string, opts: CallOptions = {}): Promise<T> {
  const token = opts.token ?? session.read()?.token;
  const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
  if (token) headers.authorization = `Bearer ${token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, { method: opts.method ?? 'GET', headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  } catch {
    throw new ApiError(0, 'The gateway did not answer: check the connection and try again.');
  }
  let json: Envelope<T> | null = null;
  try {
    json = (await res.json()) as Envelope<T>;
  } catch {
    json = null;
  }
  if (!res.ok || json?.success === false) {
    const words = json?.message ?? json?.error?.message ?? `The gateway answered ${res.status} ${res.statusText}`.trim();
    throw new ApiError(res.status, words);
  }
  return json?.data as T;
}

/** A query string from the set values only. */
export function qs(params: Record<string, string | number | undefined | null>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}

/** A keyset page of the management API. */
export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export interface Account {
  id: string;
  name: string;
  group: string;
  balance: number;
  available: number;
  held: number;
  spent: number;
  created_at: number;
}

export interface Key {
  id: string;
  account_id: string;
  name: string | null;
  prefix: string;
  models: string[] | null;
  group: string | null;
  rps_limit: number | null;
  inflight_limit: number | null;
  status: 'active' | 'revoked';
  created_at: number;
  revoked_at: number | null;
  max_spend: number | null;
  spend_window: 'day' | 'month' | null;
  spent: number | null;
  expires_at: number | null;
  rotated_at: number | null;
  previous_secret_valid_until: number | null;
  /** Only in the answers that create or rotate a key. */
  key?: string;
}

export type Health = 'active' | 'cooling' | 'disabled';

export interface ChannelKey {
  id: string;
  hint: string;
  weight: number;
  status: Health;
  cooling_until: number | null;
  disabled_reason: string | null;
  last_error: string | null;
  last_error_at: number | null;
}

export interface Channel {
  id: string;
  name: string;
  protocol: string;
  base_url: string;
  models: string[] | null;
  groups: string[] | null;
  priority: number;
  weight: number;
  enabled: boolean;
  model_map: Record<string, string>;
  settings: Record<string, unknown>;
  status: Health;
  cooling_until: number | null;
  disabled_reason: string | null;
  last_error: string | null;
  last_error_at: number | null;
  keys: ChannelKey[];
}

export interface ChannelTest {
  channel_id: string;
  protocol: string;
  model: string;
  keys: Array<{ key_id: string | null; hint: string; status: 'ok' | 'refused' | 'unreachable' | 'error'; latency_ms: number; error: string | null }>;
}

export interface Price {
  key: string;
  price: number;
  description: string | null;
}

export interface Group {
  name: string;
  price_ratio: number;
  models: string[] | null;
  rps_limit: number | null;
  inflight_limit: number | null;
}

export interface TaskSummary {
  task_id: string;
  account_id: string;
  key_id?: string | null;
  model: string;
  pool: string;
  status: string;
  channel_id?: string | null;
  price?: number;
  cost?: number;
  settled: boolean;
  created_at: number;
  completed_at: number | null;
  /** The list's and detail's error is `{code, message}`; the support lookup's (`?trace_id=`, `?request_id=`) a string. */
  error: { code?: string; message: string } | string | null;
  trace_id: string | null;
  request_id: string | null;
}

export interface TaskResult {
  images?: Array<{ url: string; width?: number; height?: number }>;
  videos?: Array<{ url: string[]; expires_at: number }>;
  text?: string;
}

export interface TaskDetail extends Omit<TaskSummary, 'error'> {
  error: { code?: string; message: string } | null;
  request?: Record<string, unknown> | null;
  upstream_task_id?: string | null;
  channel?: { id: string; name: string } | null;
  result?: TaskResult | null;
  native?: { buttons?: Array<{ customId?: string; label?: string; emoji?: string }> } | null;
  timeline?: Array<{ event: string; time: number; amount?: number; detail?: string }>;
  entries?: Array<{ kind: string; amount: number; time: number }>;
}

/** The public task (`GET /v1/tasks/{id}`), what a customer's key reads. */
export interface PublicTask {
  id: string;
  model: string;
  status: string;
  progress: number;
  cost: number;
  created: number;
  completed?: number;
  result?: TaskResult;
  error?: { message: string };
}

export interface UsageGroup {
  account?: string;
  key?: string;
  model?: string;
  channel?: string | null;
  day?: string;
  hour?: string;
  tasks: number;
  task_failures: number;
  chat_calls: number;
  chat_failures: number;
  spend: number;
  task_p50_ms: number | null;
  task_p99_ms: number | null;
  chat_p50_ms: number | null;
  chat_p99_ms: number | null;
}

export interface UsageReport {
  from: number;
  to: number;
  group_by: string[];
  counted_until: number;
  groups: UsageGroup[];
}

export interface LogItem {
  type: string;
  task_id?: string;
  entry_id?: string;
  model?: string;
  status?: string;
  cost?: number;
  amount?: number;
  time: number;
}

export interface Balance {
  account_id: string;
  name: string;
  group: string;
  balance: number;
  available: number;
  held: number;
  spent: number;
}
