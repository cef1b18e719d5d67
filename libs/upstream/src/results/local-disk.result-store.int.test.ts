import { mkdtemp, readdir, rm, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { createResultStore } from './create-result-store';
import { LocalDiskResultStore } from './local-disk.result-store';

let dir: string;
let store: LocalDiskResultStore;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'gmg-result-store-'));
  store = new LocalDiskResultStore(dir);
});
afterEach(() => rm(dir, { recursive: true, force: true }));

async function read(key: string): Promise<string | undefined> {
  const o = await store.open(key);
  if (!o) return undefined;
  const chunks: Buffer[] = [];
  for await (const c of o.body) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString();
}
const allFiles = async (): Promise<string[]> =>
  (await readdir(dir, { recursive: true, withFileTypes: true })).filter((d) => d.isFile()).map((d) => path.relative(dir, path.join(d.parentPath, d.name)));

describe('LocalDiskResultStore (real disk)', () => {
  it('streams a body to <dir>/<key> and opens it with the type of its extension and its size', async () => {
    expect(await store.put('task_1/0.mp4', Readable.from([Buffer.from('abc'), Buffer.from('de')]), { contentType: 'video/mp4' })).toEqual({ bytes: 5 });
    const o = await store.open('task_1/0.mp4');
    expect(o).toMatchObject({ contentType: 'video/mp4', bytes: 5 });
    o!.body.destroy();
    expect(await read('task_1/0.mp4')).toBe('abcde');
    expect(await allFiles()).toEqual(['task_1/0.mp4']);
  });

  it('a reader never sees half a file: the old object until the new one is whole, nothing when the body fails', async () => {
    await store.put('t/0.png', Readable.from([Buffer.from('old')]), { contentType: 'image/png' });
    const body = new PassThrough();
    const writing = store.put('t/0.png', body, { contentType: 'image/png' });
    body.write('new-half');
    await new Promise((r) => setImmediate(r));
    expect(await read('t/0.png')).toBe('old');
    body.destroy(new Error('source failed'));
    await expect(writing).rejects.toThrow('source failed');
    expect(await read('t/0.png')).toBe('old');
    expect(await allFiles()).toEqual(['t/0.png']);
  });

  it('refuses keys that could leave its directory or name odd files, and a type its extension does not name', async () => {
    for (const key of ['../x.png', 'a/../../x.png', '/abs.png', 'a//b.png', 'a/.hidden', 'a b.png', 'a/..']) {
      await expect(store.put(key, Readable.from([Buffer.from('x')]), { contentType: 'image/png' })).rejects.toThrow(/invalid result key/);
      expect(await store.open(key)).toBeUndefined();
    }
    await expect(store.put('t/0.png', Readable.from([Buffer.from('x')]), { contentType: 'video/mp4' })).rejects.toThrow(/does not match/);
    expect(await store.open('missing/0.png')).toBeUndefined();
  });

  it('sweeps objects written before the cutoff and their emptied task directories, keeping newer ones', async () => {
    await store.put('old/0.png', Readable.from([Buffer.from('o')]), { contentType: 'image/png' });
    await store.put('new/0.png', Readable.from([Buffer.from('n')]), { contentType: 'image/png' });
    const longAgo = new Date(Date.now() - 3 * 86_400_000);
    await utimes(path.join(dir, 'old/0.png'), longAgo, longAgo);
    expect(await store.sweepOlderThan(new Date(Date.now() - 86_400_000))).toBe(1);
    expect(await allFiles()).toEqual(['new/0.png']);
    expect(await readdir(dir)).toEqual(['new']);
  });

  it('createResultStore: a plain path or a file:// URL is the local disk', async () => {
    const viaUrl = createResultStore(`file://${dir}`);
    await viaUrl.put('u/0.gif', Readable.from([Buffer.from('g')]), { contentType: 'image/gif' });
    expect(await read('u/0.gif')).toBe('g');
    expect(createResultStore(dir)).toBeInstanceOf(LocalDiskResultStore);
  });
});
