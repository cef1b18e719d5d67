import { readImageHeader } from '@gmg/contracts';

type UploadImageType = 'jpeg' | 'png' | 'webp' | 'bmp';

interface ImageTypeInfo {
  type: UploadImageType;
  mime: string;
  /** File extension of the served link. */
  ext: string;
}

const TYPES: Record<UploadImageType, ImageTypeInfo> = {
  jpeg: { type: 'jpeg', mime: 'image/jpeg', ext: 'jpg' },
  png: { type: 'png', mime: 'image/png', ext: 'png' },
  webp: { type: 'webp', mime: 'image/webp', ext: 'webp' },
  bmp: { type: 'bmp', mime: 'image/bmp', ext: 'bmp' },
};

export const UPLOAD_EXTENSIONS: readonly string[] = Object.values(TYPES).map((t) => t.ext);

export interface ImageInspection extends ImageTypeInfo {
  width: number;
  height: number;
}

const isUploadType = (f: string): f is UploadImageType => f in TYPES;

/**
 * An upload's type and size from its header bytes (the shared reader of @gmg/contracts): a client may say
 * `image/png` and send anything. Undefined unless the bytes are a readable JPEG, PNG, WEBP or BMP.
 */
export function inspectImage(bytes: Buffer): ImageInspection | undefined {
  const h = readImageHeader(bytes);
  if (!h || !isUploadType(h.format)) return undefined;
  return { ...TYPES[h.format], width: h.width, height: h.height };
}
