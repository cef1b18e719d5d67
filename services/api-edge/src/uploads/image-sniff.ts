import sharp from 'sharp';

export type UploadImageType = 'jpeg' | 'png' | 'webp' | 'bmp';

export interface ImageTypeInfo {
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
export const MIME_OF_EXT: Readonly<Record<string, string>> = Object.fromEntries(Object.values(TYPES).map((t) => [t.ext, t.mime]));

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * The image type from the first bytes (magic numbers), never from a declared Content-Type or file name: a client
 * may say `image/png` and send anything.
 */
export function sniffImageType(b: Buffer): ImageTypeInfo | undefined {
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return TYPES.jpeg;
  if (b.length >= 8 && b.subarray(0, 8).equals(PNG_SIGNATURE)) return TYPES.png;
  if (b.length >= 12 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') return TYPES.webp;
  if (b.length >= 26 && b[0] === 0x42 && b[1] === 0x4d && bmpDimensions(b)) return TYPES.bmp;
  return undefined;
}

/**
 * Width and height from a BMP header (sharp/libvips has no BMP loader). `BM`, file header of 14 bytes, then a DIB
 * header: 12 bytes (OS/2 BITMAPCOREHEADER, 16-bit sides) or 40+ bytes (BITMAPINFOHEADER and later, 32-bit sides;
 * a negative height means top-down rows).
 */
export function bmpDimensions(b: Buffer): { width: number; height: number } | undefined {
  if (b.length < 26 || b[0] !== 0x42 || b[1] !== 0x4d) return undefined;
  const dib = b.readUInt32LE(14);
  if (dib === 12) return { width: b.readUInt16LE(18), height: b.readUInt16LE(20) };
  if (dib < 40 || dib > 256) return undefined;
  const width = b.readInt32LE(18);
  const height = Math.abs(b.readInt32LE(22));
  return width > 0 && height > 0 ? { width, height } : undefined;
}

export interface ImageInspection extends ImageTypeInfo {
  width: number;
  height: number;
}

/**
 * Type from the bytes, then dimensions from the header (sharp reads only the header: no decode, so a
 * decompression bomb costs nothing here). Undefined when the bytes are not a readable JPEG/PNG/WEBP/BMP, or when
 * the header sharp finds disagrees with the magic number.
 */
export async function inspectImage(bytes: Buffer): Promise<ImageInspection | undefined> {
  const info = sniffImageType(bytes);
  if (!info) return undefined;
  if (info.type === 'bmp') {
    const d = bmpDimensions(bytes);
    return d ? { ...info, ...d } : undefined;
  }
  try {
    const meta = await sharp(bytes, { failOn: 'none' }).metadata();
    if (meta.format !== info.type || !meta.width || !meta.height) return undefined;
    return { ...info, width: meta.width, height: meta.height };
  } catch {
    return undefined;
  }
}
