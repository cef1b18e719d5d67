import request from 'supertest';
import sharp from 'sharp';
import type { Express } from 'express';

/** Test helpers for the art suite (not a test file itself). */
export const PUBLIC = 'http://sim.test:9090';

/** A manual clock: tests move time instead of sleeping. */
export function manualClock() {
  let t = 1_700_000_000_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

/** supertest body parser that keeps the raw bytes. */
export const binary = ((res: NodeJS.ReadableStream, cb: (err: Error | null, body: Buffer) => void) => {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('end', () => cb(null, Buffer.concat(chunks)));
}) as unknown as Parameters<request.Test['parse']>[0];

export function artClient(app: Express) {
  const post = (action: string, body: Record<string, unknown>, key?: string) => {
    const r = request(app)
      .post(`/v1/artgen/generations${action ? `/${action}` : ''}`)
      .send(body);
    return key ? r.set('Idempotency-Key', key) : r;
  };
  const view = async (id: string) => (await request(app).get(`/v1/artgen/${id}`).expect(200)).body;
  const file = async (url: string): Promise<Buffer> => {
    const res = await request(app).get(new URL(url).pathname).buffer(true).parse(binary).expect(200);
    return res.body as Buffer;
  };
  const size = async (url: string) => {
    const m = await sharp(await file(url)).metadata();
    return { w: m.width, h: m.height, format: m.format };
  };
  /** Submits and returns the upstream task id (asserting the protocol's answer shape). */
  const submit = async (action: string, body: Record<string, unknown>, key?: string): Promise<string> => {
    const res = await post(action, body, key).expect(200);
    expect(res.body).toMatchObject({ code: 200, data: { task_id: expect.any(String), action: expect.any(String), status: expect.any(String) } });
    return res.body.data.task_id as string;
  };
  return { post, view, file, size, submit };
}

/** Mean RGB of each quadrant of a 2x2 grid image. */
export async function quadrantMeans(png: Buffer): Promise<number[][]> {
  const meta = await sharp(png).metadata();
  const w = meta.width! / 2;
  const h = meta.height! / 2;
  const out: number[][] = [];
  for (const [left, top] of [
    [0, 0],
    [w, 0],
    [0, h],
    [w, h],
  ]) {
    const stats = await sharp(await sharp(png).extract({ left, top, width: w, height: h }).png().toBuffer()).stats();
    out.push(stats.channels.slice(0, 3).map((c) => c.mean));
  }
  return out;
}

/** Raw RGB pixels of an image, or of one region of it. */
export async function rawPixels(png: Buffer, region?: { left: number; top: number; width: number; height: number }): Promise<Buffer> {
  const img = sharp(png).removeAlpha();
  return (region ? img.extract(region) : img).raw().toBuffer();
}

export const colorDistance = (a: number[], b: number[]): number => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);

/** Reads the movie duration from the mvhd box of an MP4. */
export function mp4DurationSeconds(buf: Buffer): number {
  const i = buf.indexOf('mvhd');
  if (i < 0) throw new Error('no mvhd box');
  if (buf[i + 4] === 1) return Number(buf.readBigUInt64BE(i + 4 + 4 + 16 + 4)) / buf.readUInt32BE(i + 4 + 4 + 16);
  return buf.readUInt32BE(i + 4 + 4 + 8 + 4) / buf.readUInt32BE(i + 4 + 4 + 8);
}
