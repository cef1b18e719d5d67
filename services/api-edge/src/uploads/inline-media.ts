import type { ModelContract, NormalizedRequest } from '@gmg/contracts';
import type { Logger } from '@gmg/logger';
import { uploadImage, type UploadImageDeps } from './upload-image.use-case';
import type { UploadStorage } from './upload-storage';

/**
 * Inline values up to this many characters stay in the request (a 1×1 pixel, a tiny mask: less than a URL's worth of
 * row); longer ones are stored once in the upload store and the request keeps the URL.
 */
export const INLINE_KEEP_MAX_CHARS = 4096;

type Json = Record<string, unknown>;

/** `body` with the value at `path` replaced; the containers on the path are copied, nothing else is. */
function withValueAt(body: Json, path: readonly string[], value: string): Json {
  const copy = (v: unknown): Json => (Array.isArray(v) ? ([...(v as unknown[])] as unknown as Json) : { ...(v as Json) });
  const out = copy(body);
  let node = out;
  for (const key of path.slice(0, -1)) {
    node[key] = copy(node[key]);
    node = node[key] as Json;
  }
  node[path[path.length - 1]] = value;
  return out;
}

/** The Base64 payload of a data URI or of bare Base64. */
const payloadOf = (value: string): string => (value.startsWith('data:') ? value.slice(value.indexOf(',') + 1) : value);

/** A request whose large inline media is in the upload store, and the stored names (`<id>.<ext>`) it refers to. */
export interface ExternalisedMedia {
  request: NormalizedRequest;
  stored: string[];
}

/**
 * Large inline media out of the task row: each Base64 / data-URI value of the contract's media fields is checked and
 * stored like an upload (`POST /v1/uploads/images`: JPEG, PNG, WEBP or BMP, size and side limits, refusals name the
 * field) and replaced by its upload URL, which the upstream then fetches. Called after validation and before the
 * task row is written, so a crash leaves at most an unreferenced upload (it expires with UPLOAD_TTL_SECONDS), never
 * a task whose media is missing. The same image sent twice in one request (as a data URI or bare Base64) is stored once.
 * A refusal of a later value deletes what the earlier ones stored; a refusal after this step is the caller's to
 * clean up (`discardStoredMedia`).
 */
export async function externaliseInlineMedia(
  deps: UploadImageDeps,
  contract: Pick<ModelContract, 'inlineMedia'>,
  request: NormalizedRequest,
  accountId: string,
): Promise<ExternalisedMedia> {
  const inline = contract.inlineMedia(request.upstreamBody).filter((m) => m.value.length > INLINE_KEEP_MAX_CHARS);
  if (inline.length === 0) return { request, stored: [] };
  const urls = new Map<string, string>();
  const stored: string[] = [];
  let body = request.upstreamBody;
  try {
    for (const m of inline) {
      const payload = payloadOf(m.value);
      let url = urls.get(payload);
      if (!url) {
        url = (await uploadImage(deps, { bytes: Buffer.from(payload, 'base64'), accountId, field: m.field })).url;
        urls.set(payload, url);
        stored.push(url.slice(url.lastIndexOf('/') + 1));
      }
      body = withValueAt(body, m.field.split('.'), url);
    }
  } catch (err) {
    await discardStoredMedia(deps.storage, stored);
    throw err;
  }
  return { request: { ...request, upstreamBody: body }, stored };
}

/**
 * Deletes media a submission stored when the submission is refused after all (402, the in-flight limit, an unpriced
 * model…): no task refers to it, and it would otherwise sit in the store until it expires. A failed delete is
 * logged, not raised: the refusal is the answer, and the sweeper removes the file when it expires.
 */
export async function discardStoredMedia(storage: Pick<UploadStorage, 'delete'>, stored: readonly string[], logger?: Pick<Logger, 'warn'>): Promise<void> {
  await Promise.all(
    stored.map((name) =>
      storage.delete(name).catch((err: unknown) => logger?.warn({ err, upload: name }, 'could not delete the media of a refused submission')),
    ),
  );
}
