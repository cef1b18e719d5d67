import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { UPLOAD_EXTENSIONS } from './image-sniff';
import type { StoredUpload, UploadMeta, UploadStorage } from './upload-storage';
import { storedName } from './upload-storage';

/** Served names only: no path separators, no dots but the one before the extension. */
export const UPLOAD_NAME_PATTERN = new RegExp(`^[A-Za-z0-9_-]{16,128}\\.(${UPLOAD_EXTENSIONS.join('|')})$`);

const META_SUFFIX = '.meta.json';
const TMP_SUFFIX = '.tmp';
/** A data or temp file without its metadata older than this is the leftover of a crash mid-write. */
const ORPHAN_AFTER_MS = 60 * 60 * 1000;

interface MetaFile extends Omit<UploadMeta, 'createdAt' | 'expiresAt'> {
  createdAt: string;
  expiresAt: string;
}

/**
 * Uploads on a local disk (one directory): `<id>.<ext>` holds the bytes, `<id>.<ext>.meta.json` the metadata.
 * Each file is written to a temp name and renamed, and the metadata goes last: it is the commit marker, so a
 * reader never sees half an upload. Several replicas need a shared volume; otherwise use object storage.
 */
export class LocalDiskUploadStorage implements UploadStorage {
  constructor(private readonly dir: string) {}

  async put(meta: UploadMeta, body: Buffer): Promise<void> {
    const name = storedName(meta);
    if (!UPLOAD_NAME_PATTERN.test(name)) throw new Error(`invalid upload name '${name}'`);
    await fs.mkdir(this.dir, { recursive: true });
    await this.writeAtomic(name, body);
    const m: MetaFile = { ...meta, createdAt: meta.createdAt.toISOString(), expiresAt: meta.expiresAt.toISOString() };
    await this.writeAtomic(name + META_SUFFIX, Buffer.from(JSON.stringify(m)));
  }

  async get(name: string, now = new Date()): Promise<StoredUpload | undefined> {
    if (!UPLOAD_NAME_PATTERN.test(name)) return undefined;
    const meta = await this.readMeta(name);
    if (!meta || meta.expiresAt.getTime() <= now.getTime()) return undefined;
    const body = await fs.readFile(path.join(this.dir, name)).catch(() => undefined);
    return body ? { meta, body } : undefined;
  }

  async delete(name: string): Promise<void> {
    if (!UPLOAD_NAME_PATTERN.test(name)) return;
    // metadata first: from then on the upload is gone for readers even if the data file outlives a crash
    await fs.rm(path.join(this.dir, name + META_SUFFIX), { force: true });
    await fs.rm(path.join(this.dir, name), { force: true });
  }

  async sweepExpired(now = new Date()): Promise<number> {
    const entries = await fs.readdir(this.dir).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return [] as string[];
      throw e;
    });
    const present = new Set(entries);
    let removed = 0;
    for (const entry of entries) {
      if (entry.endsWith(META_SUFFIX)) {
        const name = entry.slice(0, -META_SUFFIX.length);
        const meta = await this.readMeta(name);
        if (!meta || meta.expiresAt.getTime() <= now.getTime()) {
          await this.delete(name);
          removed++;
        }
      } else if (entry.endsWith(TMP_SUFFIX) || (UPLOAD_NAME_PATTERN.test(entry) && !present.has(entry + META_SUFFIX))) {
        const st = await fs.stat(path.join(this.dir, entry)).catch(() => undefined);
        if (st && now.getTime() - st.mtimeMs > ORPHAN_AFTER_MS) await fs.rm(path.join(this.dir, entry), { force: true });
      }
    }
    return removed;
  }

  private async readMeta(name: string): Promise<UploadMeta | undefined> {
    try {
      const m = JSON.parse(await fs.readFile(path.join(this.dir, name + META_SUFFIX), 'utf8')) as MetaFile;
      return { ...m, createdAt: new Date(m.createdAt), expiresAt: new Date(m.expiresAt) };
    } catch {
      return undefined;
    }
  }

  private async writeAtomic(name: string, data: Buffer): Promise<void> {
    const tmp = path.join(this.dir, `${name}.${randomBytes(6).toString('hex')}${TMP_SUFFIX}`);
    await fs.writeFile(tmp, data, { mode: 0o600 });
    await fs.rename(tmp, path.join(this.dir, name));
  }
}
