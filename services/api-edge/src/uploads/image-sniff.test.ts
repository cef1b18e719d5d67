import { inspectImage } from './image-sniff';
import { makeBmp, renderImage as render } from './test-images.test-kit';

describe('upload image inspection from bytes', () => {
  it.each(['jpeg', 'png', 'webp'] as const)('recognizes a real %s and reads its size', async (format) => {
    expect(inspectImage(await render(format, 40, 30))).toMatchObject({ type: format, width: 40, height: 30 });
  });

  it('recognizes a BMP, bottom-up and top-down, with its size from the header', () => {
    expect(inspectImage(makeBmp(20, 17))).toEqual({ type: 'bmp', mime: 'image/bmp', ext: 'bmp', width: 20, height: 17 });
    expect(inspectImage(makeBmp(20, 17, true))).toMatchObject({ width: 20, height: 17 });
  });

  it('ignores what the bytes claim elsewhere: text, GIF, an SVG and a truncated PNG are not accepted', async () => {
    expect(inspectImage(Buffer.from('hello, not an image'))).toBeUndefined();
    expect(inspectImage(Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1'))).toBeUndefined();
    expect(inspectImage(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'))).toBeUndefined();
    const png = await render('png');
    expect(inspectImage(png.subarray(0, 12))).toBeUndefined();
  });

  it('refuses a "BM" prefix without a valid DIB header', () => {
    const b = makeBmp(4, 4);
    b.writeUInt32LE(7, 14);
    expect(inspectImage(b)).toBeUndefined();
  });
});
