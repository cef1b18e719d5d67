import sharp from 'sharp';
import { cutQuadrants } from './quadrants';

/** The art worker's cutter on a real image: four quadrants of a 2×2 grid of solid colours, each exactly its colour. */
it('cuts an image into its four quadrants, in reading order, as PNG', async () => {
  const colours = ['#ff0000', '#00ff00', '#0000ff', '#ffff00'];
  const quadrant = (c: string) =>
    sharp({ create: { width: 20, height: 10, channels: 3, background: c } })
      .png()
      .toBuffer();
  const [a, b, c, d] = await Promise.all(colours.map(quadrant));
  const grid = await sharp({ create: { width: 40, height: 20, channels: 3, background: '#000000' } })
    .composite([
      { input: a!, left: 0, top: 0 },
      { input: b!, left: 20, top: 0 },
      { input: c!, left: 0, top: 10 },
      { input: d!, left: 20, top: 10 },
    ])
    .png()
    .toBuffer();
  const out = await cutQuadrants(grid);
  expect({ width: out.width, height: out.height, tiles: out.tiles.length }).toEqual({ width: 20, height: 10, tiles: 4 });
  const seen = await Promise.all(
    out.tiles.map(async (t) => {
      const { data, info } = await sharp(t).raw().toBuffer({ resolveWithObject: true });
      expect(info).toMatchObject({ width: 20, height: 10, format: 'raw' });
      return `#${[...data.subarray(0, 3)].map((v) => v.toString(16).padStart(2, '0')).join('')}`;
    }),
  );
  expect(seen).toEqual(colours);
  await expect(cutQuadrants(Buffer.from('not an image'))).rejects.toThrow();
});
