import { readImageHeader } from '@gmg/contracts';

/** Bytes read from a reference before giving up on finding its header (JPEG headers may follow large EXIF blocks). */
const MAX_HEADER_BYTES = 1024 * 1024;

/**
 * Measures a reference image by its URL, as an upstream does for lumen-2 `size: auto`: fetches the start of the
 * file (bounded in time and bytes; the gateway's own upload links included) and reads the size from its header.
 * Undefined when it cannot be fetched or is not a readable image. The simulator is a test double: it fetches
 * whatever a test or a local run sends it, it is never deployed in front of a network worth protecting.
 */
export async function measureReference(url: string, timeoutMs = 5000): Promise<{ width: number; height: number } | undefined> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'follow' });
  } catch {
    return undefined;
  }
  if (!res.ok || !res.body) {
    await res.body?.cancel().catch(() => undefined);
    return undefined;
  }
  // fetch types a body's chunks as `any`; they are bytes
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for (let i = 0; i < 10_000 && total < MAX_HEADER_BYTES; i++) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(Buffer.from(value));
      total += value.byteLength;
      const header = readImageHeader(Buffer.concat(chunks));
      if (header) return { width: header.width, height: header.height };
    }
    return undefined;
  } catch {
    return undefined;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
