/** A kept file's type, from its first bytes. */
export interface MediaType {
  kind: 'image' | 'video';
  /** The result's `format` (images) and the key's extension. */
  format: 'jpeg' | 'png' | 'webp' | 'gif' | 'mp4' | 'mov' | 'webm';
  ext: string;
  mime: string;
}

/** Bytes the sniff needs at most (EBML's DocType sits within the first few dozen bytes). */
export const SNIFF_BYTES = 64;

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const EBML = Buffer.from([0x1a, 0x45, 0xdf, 0xa3]);
/** ISO-BMFF brands of still images (AVIF, HEIF): an `ftyp` box is not a video by itself. */
const STILL_BRANDS = new Set(['avif', 'avis', 'heic', 'heix', 'hevc', 'mif1', 'msf1']);

const T = {
  jpeg: { kind: 'image', format: 'jpeg', ext: 'jpg', mime: 'image/jpeg' },
  png: { kind: 'image', format: 'png', ext: 'png', mime: 'image/png' },
  webp: { kind: 'image', format: 'webp', ext: 'webp', mime: 'image/webp' },
  gif: { kind: 'image', format: 'gif', ext: 'gif', mime: 'image/gif' },
  mp4: { kind: 'video', format: 'mp4', ext: 'mp4', mime: 'video/mp4' },
  mov: { kind: 'video', format: 'mov', ext: 'mov', mime: 'video/quicktime' },
  webm: { kind: 'video', format: 'webm', ext: 'webm', mime: 'video/webm' },
} as const satisfies Record<string, MediaType>;

/**
 * The type of a file from its first bytes (never from a vendor's Content-Type or file name): JPEG, PNG, WEBP, GIF
 * images; MP4 / QuickTime (`ftyp` box) and WEBM (EBML with DocType webm) videos. Undefined for anything else.
 */
export function sniffMediaType(head: Buffer): MediaType | undefined {
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return T.jpeg;
  if (head.length >= 8 && head.subarray(0, 8).equals(PNG)) return T.png;
  if (head.length >= 12 && head.toString('latin1', 0, 4) === 'RIFF' && head.toString('latin1', 8, 12) === 'WEBP') return T.webp;
  if (head.length >= 6 && /^GIF8[79]a$/.test(head.toString('latin1', 0, 6))) return T.gif;
  if (head.length >= 12 && head.toString('latin1', 4, 8) === 'ftyp') {
    const brand = head.toString('latin1', 8, 12);
    if (STILL_BRANDS.has(brand)) return undefined;
    return brand === 'qt  ' ? T.mov : T.mp4;
  }
  if (head.length >= 4 && head.subarray(0, 4).equals(EBML) && head.subarray(0, SNIFF_BYTES).includes('webm', 0, 'latin1')) return T.webm;
  return undefined;
}
