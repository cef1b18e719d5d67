import sharp from 'sharp';

/** A real image of the given format and size (solid colour). */
export const renderImage = (format: 'jpeg' | 'png' | 'webp', width = 40, height = 30): Promise<Buffer> =>
  sharp({ create: { width, height, channels: 3, background: { r: 10, g: 200, b: 90 } } })
    .toFormat(format)
    .toBuffer();

/** A minimal 24-bit BITMAPINFOHEADER BMP (rows padded to 4 bytes); sharp cannot write BMP. */
export function makeBmp(width: number, height: number, topDown = false): Buffer {
  const row = Math.ceil((width * 3) / 4) * 4;
  const b = Buffer.alloc(54 + row * height);
  b.write('BM', 0, 'latin1');
  b.writeUInt32LE(b.length, 2);
  b.writeUInt32LE(54, 10);
  b.writeUInt32LE(40, 14);
  b.writeInt32LE(width, 18);
  b.writeInt32LE(topDown ? -height : height, 22);
  b.writeUInt16LE(1, 26);
  b.writeUInt16LE(24, 28);
  return b;
}
