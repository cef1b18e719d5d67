import type { UploadStorage } from './upload-storage';
import { UPLOADS_PATH } from './upload-image.use-case';

/** The stored size of one of our own upload links, or undefined (another URL, unknown or expired upload). */
export type UploadSizeLookup = (url: string) => Promise<{ width: number; height: number } | undefined>;

/**
 * Measures a reference the gateway holds itself: lumen-2 `size: auto` follows the first reference's ratio, and the
 * edge knows the size of its own uploads (recorded at upload) without fetching anything.
 */
export function uploadSizeLookup(storage: Pick<UploadStorage, 'get'>, publicBaseUrl: string): UploadSizeLookup {
  const prefix = `${publicBaseUrl}${UPLOADS_PATH}/`;
  return async (url) => {
    if (!url.startsWith(prefix)) return undefined;
    const name = url.slice(prefix.length);
    if (name.includes('/') || name.includes('?') || name.includes('#')) return undefined;
    const stored = await storage.get(name);
    return stored ? { width: stored.meta.width, height: stored.meta.height } : undefined;
  };
}
