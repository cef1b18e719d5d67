import { randomBytes } from 'node:crypto';
import { createWriteStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { checkResultKey, contentTypeOfKey, isResultKey, type ResultStore } from './result-store';

const TMP_SUFFIX = '.tmp';
/** A temp file older than this is the leftover of a crash mid-write. */
const ORPHAN_AFTER_MS = 60 * 60 * 1000;

/**
 * Results on a local disk (`npm start`'s default; several replicas need a shared volume, else object storage):
 * `<dir>/<key>`. A put streams to a temp name in the same directory and renames it over the key, so a reader never
 * sees half a file. The content type is the key's extension's (keys are ours); a put that says otherwise is refused.
 */
export class LocalDiskResultStore implements ResultStore {
  constructor(private readonly dir: string) {}

  async put(key: string, body: Readable, meta: { contentType: string }): Promise<{ bytes: number }> {
    checkResultKey(key);
    if (meta.contentType !== contentTypeOfKey(key)) throw new Error(`content type ${meta.contentType} does not match the key's extension`);
    const file = path.join(this.dir, key);
    await fs.mkdir(path.dirname(file), { recursive: true });
    const tmp = `${file}.${randomBytes(6).toString('hex')}${TMP_SUFFIX}`;
    let bytes = 0;
    const count = new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        done(null, chunk);
      },
    });
    try {
      await pipeline(body, count, createWriteStream(tmp, { mode: 0o600 }));
      await fs.rename(tmp, file);
    } catch (e) {
      await fs.rm(tmp, { force: true });
      throw e;
    }
    return { bytes };
  }

  async open(key: string): Promise<{ body: Readable; contentType: string; bytes: number } | undefined> {
    if (!isResultKey(key)) return undefined;
    const file = path.join(this.dir, key);
    // Opened before stat: a sweep or an overwrite between the two cannot swap the file under the size we answer.
    const handle = await fs.open(file, 'r').catch(() => undefined);
    if (!handle) return undefined;
    const st = await handle.stat();
    if (!st.isFile()) {
      await handle.close();
      return undefined;
    }
    return { body: handle.createReadStream(), contentType: contentTypeOfKey(key), bytes: st.size };
  }

  async sweepOlderThan(cutoff: Date): Promise<number> {
    const tops = await readdir(this.dir);
    let removed = 0;
    for (const top of tops) {
      const dir = path.join(this.dir, top);
      const st = await fs.stat(dir).catch(() => undefined);
      if (!st) continue;
      const entries = st.isDirectory() ? (await readdir(dir)).map((e) => path.join(dir, e)) : [dir];
      for (const file of entries) removed += await this.sweepFile(file, cutoff);
      // An emptied task directory goes too (rmdir refuses a directory a put has just written to again).
      if (st.isDirectory()) await fs.rmdir(dir).catch(() => undefined);
    }
    return removed;
  }

  private async sweepFile(file: string, cutoff: Date): Promise<number> {
    const st = await fs.stat(file).catch(() => undefined);
    if (!st?.isFile()) return 0;
    const tmp = file.endsWith(TMP_SUFFIX);
    const limit = tmp ? Math.min(cutoff.getTime(), Date.now() - ORPHAN_AFTER_MS) : cutoff.getTime();
    if (st.mtimeMs >= limit) return 0;
    await fs.rm(file, { force: true });
    return tmp ? 0 : 1;
  }
}

async function readdir(dir: string): Promise<string[]> {
  return fs.readdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return [];
    throw e;
  });
}
