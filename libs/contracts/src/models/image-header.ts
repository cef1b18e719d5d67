/**
 * The one image header reader: format and pixel size from the first bytes (PNG, JPEG, WEBP, GIF, BMP), never from a
 * declared type or file name, and without decoding — so a decompression bomb costs nothing here. Used by the
 * contracts (Base64 references) and by the edge's uploads. Pure.
 */

export interface ImageSize {
  width: number;
  height: number;
}

export type ImageFormat = 'png' | 'jpeg' | 'webp' | 'gif' | 'bmp';

export interface ImageHeader extends ImageSize {
  format: ImageFormat;
}

/** JPEG SOF markers can follow a large EXIF block: Base64 is decoded up to this many bytes, no more. */
const MAX_HEADER_BYTES = 256 * 1024;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Accepts a data URI (`data:image/png;base64,...`) or bare Base64. */
export function base64ImageSize(data: string): ImageSize | undefined {
  const comma = data.startsWith('data:') ? data.indexOf(',') : -1;
  const b64 = (comma >= 0 ? data.slice(comma + 1) : data).replace(/\s+/g, '');
  const chars = Math.ceil((MAX_HEADER_BYTES * 4) / 3 / 4) * 4;
  const header = readImageHeader(Buffer.from(b64.slice(0, chars), 'base64'));
  return header && { width: header.width, height: header.height };
}

/** Format and size from the header, or undefined when the bytes are not a readable image of a known format. */
export function readImageHeader(b: Buffer): ImageHeader | undefined {
  const size =
    b.length >= 24 && b.subarray(0, 8).equals(PNG_SIGNATURE) && b.toString('latin1', 12, 16) === 'IHDR'
      ? { format: 'png' as const, width: b.readUInt32BE(16), height: b.readUInt32BE(20) }
      : b.length >= 10 && b.toString('latin1', 0, 3) === 'GIF'
        ? { format: 'gif' as const, width: b.readUInt16LE(6), height: b.readUInt16LE(8) }
        : b.length >= 30 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP'
          ? withFormat('webp', webpSize(b))
          : b.length >= 4 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff
            ? withFormat('jpeg', jpegSize(b))
            : withFormat('bmp', bmpSize(b));
  return size && size.width > 0 && size.height > 0 ? size : undefined;
}

const withFormat = (format: ImageFormat, s: ImageSize | undefined): ImageHeader | undefined => s && { format, ...s };

function webpSize(b: Buffer): ImageSize | undefined {
  const chunk = b.toString('latin1', 12, 16);
  if (chunk === 'VP8X') return { width: 1 + b.readUIntLE(24, 3), height: 1 + b.readUIntLE(27, 3) };
  if (chunk === 'VP8 ') return { width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
  if (chunk === 'VP8L') {
    const bits = b.readUInt32LE(21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1 };
  }
  return undefined;
}

function jpegSize(b: Buffer): ImageSize | undefined {
  let i = 2;
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) return undefined;
    const marker = b[i + 1]!;
    if (marker === 0xff) {
      i++;
      continue;
    }
    const len = b.readUInt16BE(i + 2);
    // SOF0..SOF15 except DHT (C4), JPG (C8), DAC (CC)
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7) };
    }
    i += 2 + len;
  }
  return undefined;
}

/**
 * `BM`, a file header of 14 bytes, then a DIB header: 12 bytes (OS/2 BITMAPCOREHEADER, 16-bit sides) or 40+ bytes
 * (BITMAPINFOHEADER and later, 32-bit sides; a negative height means top-down rows).
 */
function bmpSize(b: Buffer): ImageSize | undefined {
  if (b.length < 26 || b[0] !== 0x42 || b[1] !== 0x4d) return undefined;
  const dib = b.readUInt32LE(14);
  if (dib === 12) return { width: b.readUInt16LE(18), height: b.readUInt16LE(20) };
  if (dib < 40 || dib > 256) return undefined;
  return { width: b.readInt32LE(18), height: Math.abs(b.readInt32LE(22)) };
}
