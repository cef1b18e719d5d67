import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import express, { type RequestHandler } from 'express';
import request from 'supertest';
import pino from 'pino';
import { DomainError } from '@gmg/errors';
import type { AuthPrincipal } from '@gmg/db';
import { errorHandler, routeNotFound } from '../http/error-handler';
import { setPrincipal } from '../http/principal';
import { LocalDiskUploadStorage } from './local-disk.storage';
import { createUploadsRouter } from './uploads.router';
import { makeBmp, renderImage } from './test-images.test-kit';

const BASE = 'http://gw.example.test';
const MAX = 64 * 1024;

describe('uploads router (real disk storage, express app, no network)', () => {
  let dir: string;
  let clock: Date;
  let app: express.Express;
  let storage: LocalDiskUploadStorage;

  const auth: RequestHandler = (req, res, next) => {
    if (req.headers.authorization !== 'Bearer good') throw new DomainError('authentication', 'Invalid API key');
    setPrincipal(res, { accountId: 'acc_1', keyId: 'key_1' } as AuthPrincipal);
    next();
  };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'gmg-uploads-'));
    storage = new LocalDiskUploadStorage(dir);
    clock = new Date('2030-01-01T00:00:00Z');
    const logger = pino({ level: 'silent' });
    app = express();
    app.use(
      '/v1/uploads',
      createUploadsRouter({
        storage,
        publicBaseUrl: BASE,
        limits: { maxBytes: MAX, minSide: 16, maxSide: 4096, ttlSeconds: 3600 },
        authenticate: auth,
        logger,
        sweepIntervalMs: 0,
        now: () => clock,
      }),
    );
    app.use(routeNotFound);
    app.use(errorHandler(logger));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const post = () => request(app).post('/v1/uploads/images').set('authorization', 'Bearer good');
  const local = (url: string) => url.slice(BASE.length);

  it('stores a multipart PNG and serves the same bytes without auth, with its type and an expiry', async () => {
    const png = await renderImage('png', 64, 48);
    const r = await post().attach('file', png, { filename: 'photo.jpg', contentType: 'image/jpeg' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      code: 200,
      data: {
        url: expect.stringMatching(/^http:\/\/gw\.example\.test\/v1\/uploads\/img_[A-Za-z0-9_-]{32}\.png$/),
        id: expect.stringMatching(/^img_/),
        mime: 'image/png', // from the bytes, not the declared image/jpeg
        bytes: png.length,
        width: 64,
        height: 48,
        expires_at: Math.floor(clock.getTime() / 1000) + 3600,
      },
    });
    const g = await request(app)
      .get(local(r.body.data.url))
      .buffer(true)
      .parse((res, cb) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => cb(null, Buffer.concat(chunks)));
      });
    expect(g.status).toBe(200);
    expect(g.headers['content-type']).toBe('image/png');
    expect(g.headers['x-content-type-options']).toBe('nosniff');
    expect(Buffer.compare(g.body as Buffer, png)).toBe(0);
  });

  it('accepts JSON Base64, plain and as a data URI, and a BMP', async () => {
    const jpeg = await renderImage('jpeg', 20, 20);
    const plain = await post().send({ image: jpeg.toString('base64') });
    expect([plain.status, plain.body.data?.mime, plain.body.data?.bytes]).toEqual([200, 'image/jpeg', jpeg.length]);
    const webp = await renderImage('webp', 30, 16);
    const uri = await post().send({ image: `data:image/png;base64,${webp.toString('base64')}` });
    expect([uri.status, uri.body.data?.mime, uri.body.data?.width, uri.body.data?.height]).toEqual([200, 'image/webp', 30, 16]);
    const bmp = await post().send({ image: makeBmp(17, 19).toString('base64') });
    expect([bmp.status, bmp.body.data?.url.endsWith('.bmp'), bmp.body.data?.width]).toEqual([200, true, 17]);
  });

  it.each([
    [
      'a text file in `file`',
      () => post().attach('file', Buffer.from('just text'), { filename: 'a.png', contentType: 'image/png' }),
      400,
      /not a JPEG, PNG, WEBP or BMP/,
    ],
    ['a JSON body without `image`', () => post().send({ file: 'x' }), 400, /`image` is required/],
    ['invalid Base64', () => post().send({ image: '***' }), 400, /not valid Base64/],
    ['multipart without a file', () => post().field('note', 'x'), 400, /`file` is required/],
    ['a file in another field', () => post().attach('picture', Buffer.from('x'), 'a.png'), 400, /unexpected file field 'picture'/],
    ['an image below 16 px per side', async () => post().attach('file', await renderImage('png', 8, 40), 'a.png'), 400, /width 8 px is outside 16\.\.4096/],
    ['a text/plain body', () => post().set('content-type', 'text/plain').send('hi'), 415, /multipart\/form-data or application\/json/],
  ])('refuses %s', async (_what, send, status, message) => {
    const r = await send();
    expect(r.status).toBe(status);
    expect(r.body).toEqual({ error: { code: status, type: 'invalid_request_error', message: expect.stringMatching(message) } });
  });

  it('answers 413 in the spec error shape for a file or a Base64 image above the limit', async () => {
    const big = Buffer.concat([await renderImage('png', 20, 20), Buffer.alloc(MAX)]);
    const m = await post().attach('file', big, 'big.png');
    expect(m.status).toBe(413);
    expect(m.body).toEqual({ error: { code: 413, type: 'invalid_request_error', message: expect.stringMatching(/larger than the limit of 65536 bytes/) } });
    const j = await post().send({ image: big.toString('base64') });
    expect([j.status, j.body.error?.type]).toEqual([413, 'invalid_request_error']);
  });

  it('needs a key to upload but not to read; unknown names and path tricks are 404', async () => {
    const r = await request(app).post('/v1/uploads/images').send({ image: 'x' });
    expect(r.status).toBe(401);
    expect((await request(app).get('/v1/uploads/img_doesnotexistdoesnotexist00.png')).status).toBe(404);
    expect((await request(app).get('/v1/uploads/..%2f..%2fetc%2fpasswd')).status).toBe(404);
    expect((await request(app).get('/v1/uploads/images')).status).toBe(405);
  });

  it('stops serving after the TTL (404) and the sweep deletes the files', async () => {
    const r = await post().attach('file', await renderImage('png', 32, 32), 'a.png');
    const url = local(r.body.data.url);
    const name = url.split('/').pop()!;
    expect((await request(app).get(url)).status).toBe(200);
    clock = new Date(clock.getTime() + 3600 * 1000);
    const gone = await request(app).get(url);
    expect(gone.status).toBe(404);
    expect(gone.body.error.type).toBe('not_found_error');
    await storage.sweepExpired(clock);
    expect((await readdir(dir)).filter((f) => f.startsWith(name))).toEqual([]);
  });
});
