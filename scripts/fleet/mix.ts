/**
 * The traffic of the compressed day: which requests, in what shares, and what each one sends. Every body is a
 * documented request of its route (docs/models.md, docs/artgen.md, docs/avatars.md, docs/messages.md); none carries
 * a `[sim:…]` marker, so every task is expected to complete.
 */
export type Kind = 'image' | 'video' | 'artgen' | 'avatar' | 'messages';
export const KINDS: readonly Kind[] = ['image', 'video', 'artgen', 'avatar', 'messages'];

/**
 * Default shares of requests (percent). Images dominate (10 of the 21 task models in docs/models.md are image
 * models, and an image is the cheapest, shortest task); videos and the art suite follow; avatar review batches are
 * rare (an account reviews its presenters once, then renders videos with them); messages calls are the synchronous
 * path that has no queue. FLEET_MIX="image=70,video=12,…" replaces it.
 */
export const DEFAULT_MIX: Readonly<Record<Kind, number>> = Object.freeze({ image: 70, video: 12, artgen: 10, avatar: 3, messages: 5 });

export function parseMix(raw: string | undefined): Record<Kind, number> {
  const mix: Record<Kind, number> = { ...DEFAULT_MIX };
  if (!raw) return mix;
  for (const k of KINDS) mix[k] = 0;
  for (const part of raw.split(',')) {
    const [k, v] = part.split('=').map((s) => s.trim());
    if (!KINDS.includes(k as Kind) || !Number.isFinite(Number(v)) || Number(v) < 0)
      throw new Error(`FLEET_MIX: bad entry "${part}" (kinds: ${KINDS.join(', ')})`);
    mix[k as Kind] = Number(v);
  }
  if (KINDS.every((k) => mix[k] === 0)) throw new Error('FLEET_MIX: every share is 0');
  return mix;
}

/** Picks a kind for a uniform `u` in [0, 1). */
export function pick(mix: Record<Kind, number>, u: number): Kind {
  const total = KINDS.reduce((s, k) => s + mix[k], 0);
  let acc = 0;
  for (const k of KINDS) {
    acc += mix[k] / total;
    if (u < acc) return k;
  }
  return 'image';
}

export interface Request {
  path: string;
  body: Record<string, unknown>;
  /** Submissions that take an Idempotency-Key (docs/idempotency.md), so a retry on the other edge is safe. */
  idempotent: boolean;
}

export function requestOf(kind: Kind, i: number, callbackUrl: string | undefined): Request {
  const cb = callbackUrl ? { callback_url: callbackUrl } : {};
  switch (kind) {
    case 'image':
      return { path: '/v1/images/generations', body: { model: 'lumen-2-flex', prompt: `fleet image ${i}: a lighthouse at dawn`, ...cb }, idempotent: true };
    case 'video':
      return { path: '/v1/videos/generations', body: { model: 'clipq3-turbo', prompt: `fleet video ${i}: waves on a beach`, ...cb }, idempotent: true };
    case 'artgen':
      return { path: '/v1/artgen/generations/imagine', body: { prompt: `fleet art ${i}: a fox in the snow`, ...cb }, idempotent: false };
    case 'avatar':
      return {
        path: '/v1/motion2/private-avatar',
        body: { assets: [0, 1].map((j) => ({ url: `https://cdn.example.com/fleet/${i}-${j}.png`, name: `presenter ${i}-${j}` })), ...cb },
        idempotent: false,
      };
    case 'messages':
      return {
        path: '/v1/messages',
        body: { model: 'lumen-chat-1-mini', max_tokens: 64, messages: [{ role: 'user', content: `fleet hello ${i}` }] },
        idempotent: false,
      };
  }
}

/** The task id in a submission's acknowledgement (the shapes differ per route; docs/models.md "ack"). */
export function taskIdOf(json: unknown): string | undefined {
  const d = (json as { data?: unknown })?.data;
  if (Array.isArray(d)) return (d[0] as { task_id?: string } | undefined)?.task_id;
  const o = d as { task_id?: string; id?: string } | undefined;
  return o?.task_id ?? o?.id;
}
