/** What is kept next to the bytes of one upload. */
export interface UploadMeta {
  /** Unguessable id (>= 128 bits of randomness), also the file name without extension. */
  id: string;
  /** `jpg`, `png`, `webp` or `bmp`: the served name is `<id>.<ext>`. */
  ext: string;
  mime: string;
  bytes: number;
  width: number;
  height: number;
  /** The account that uploaded it (audit only: the link itself is the capability). */
  accountId: string;
  createdAt: Date;
  expiresAt: Date;
}

export interface StoredUpload {
  meta: UploadMeta;
  body: Buffer;
}

/**
 * Where uploaded images live. Small on purpose so object storage (S3, GCS, R2…) fits in one file: `put` once,
 * `get` by the served name, `delete`, and `sweepExpired` for stores without native expiry (a bucket lifecycle
 * rule can make it a no-op). `get` must answer `undefined` for an expired object even before the sweep ran.
 */
export interface UploadStorage {
  put(meta: UploadMeta, body: Buffer): Promise<void>;
  /** `name` is `<id>.<ext>`; undefined when unknown, expired or unreadable. */
  get(name: string, now?: Date): Promise<StoredUpload | undefined>;
  delete(name: string): Promise<void>;
  /** Removes every expired upload; returns how many were removed. */
  sweepExpired(now?: Date): Promise<number>;
}

export const storedName = (meta: Pick<UploadMeta, 'id' | 'ext'>): string => `${meta.id}.${meta.ext}`;
