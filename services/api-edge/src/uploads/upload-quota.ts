import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';
import { uploadQuotaKey, type Redis } from '@gmg/queue';
import { formatBytes } from './upload-image.use-case';
import { storedName, type UploadMeta } from './upload-storage';

/** Per account, over its uploads that have not expired; 0 turns a bound off. */
export interface UploadQuotaLimits {
  /** UPLOAD_QUOTA_BYTES: decoded bytes stored. */
  maxBytes: number;
  /** UPLOAD_QUOTA_FILES: files stored. */
  maxFiles: number;
}

/**
 * KEYS: the account's set (member `<name> <bytes>`, score = expiry ms) and its byte total.
 * ARGV: now ms, member, bytes, expiry ms, max bytes, max files.
 * Drops the expired members first (their bytes leave the total), then adds the upload if both bounds hold. Refused:
 * {0, files, bytes used, ms at which enough has expired for this upload (a later upload may take that room)}.
 */
const RESERVE_LUA = `
local now = tonumber(ARGV[1])
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
if #expired > 0 then
  local freed = 0
  for _, m in ipairs(expired) do freed = freed + tonumber(string.match(m, ' (%d+)$')) end
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  redis.call('DECRBY', KEYS[2], freed)
end
local files = redis.call('ZCARD', KEYS[1])
local used = 0
if files > 0 then used = tonumber(redis.call('GET', KEYS[2]) or '0') end
local bytes = tonumber(ARGV[3])
local maxBytes = tonumber(ARGV[5])
local maxFiles = tonumber(ARGV[6])
local function fits(f, u) return (maxFiles == 0 or f + 1 <= maxFiles) and (maxBytes == 0 or u + bytes <= maxBytes) end
if not fits(files, used) then
  local at = now
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 999, 'WITHSCORES')
  local f, u = files, used
  for i = 1, #oldest, 2 do
    f = f - 1
    u = u - tonumber(string.match(oldest[i], ' (%d+)$'))
    at = tonumber(oldest[i + 1])
    if fits(f, u) then break end
  end
  return {0, files, used, at}
end
redis.call('ZADD', KEYS[1], tonumber(ARGV[4]), ARGV[2])
local total
if files == 0 then
  redis.call('SET', KEYS[2], bytes)
  total = bytes
else
  total = redis.call('INCRBY', KEYS[2], bytes)
end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
local until_ms = math.floor(tonumber(last[2]))
redis.call('PEXPIREAT', KEYS[1], until_ms)
redis.call('PEXPIREAT', KEYS[2], until_ms)
return {1, files + 1, total, 0}
`;

/** KEYS as above; ARGV: member, bytes. */
const RELEASE_LUA = `
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then redis.call('DECRBY', KEYS[2], tonumber(ARGV[2])) end
return 1
`;

/**
 * The per-account upload quota: the files and bytes an account keeps in the upload store through
 * `POST /v1/uploads/images` (free, so otherwise bounded only by the request rate) until they expire. Counted in Redis,
 * atomically across edges; the count drops as uploads expire, so a refusal (429 `rate_limit_error`, rule
 * `upload_quota_bytes` or `upload_quota_files`) carries `Retry-After` until enough has expired. Redis unavailable:
 * the upload is let through (logged) — the request rate still bounds it.
 */
export class UploadQuota {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly limits: UploadQuotaLimits,
    private readonly logger: Pick<Logger, 'warn'>,
  ) {}

  get enabled(): boolean {
    return this.limits.maxBytes > 0 || this.limits.maxFiles > 0;
  }

  /** Counts `meta` against its account's quota, or throws the 429 when it does not fit. Call before storing. */
  async reserve(meta: UploadMeta, now: Date): Promise<void> {
    if (!this.enabled) return;
    const [k, totalKey] = this.keys(meta.accountId);
    let answer: [number, number, number, number];
    try {
      answer = (await this.redis.eval(
        RESERVE_LUA,
        2,
        k,
        totalKey,
        String(now.getTime()),
        memberOf(meta),
        String(meta.bytes),
        String(meta.expiresAt.getTime()),
        String(this.limits.maxBytes),
        String(this.limits.maxFiles),
      )) as [number, number, number, number];
    } catch (err) {
      this.logger.warn({ err, accountId: meta.accountId }, 'upload quota: Redis unavailable, upload not counted');
      return;
    }
    const [ok, files, used, freeAt] = answer.map(Number);
    if (ok === 1) return;
    const retryAfter = Math.max(1, Math.ceil((freeAt - now.getTime()) / 1000));
    const { maxBytes, maxFiles } = this.limits;
    const byFiles = maxFiles > 0 && files + 1 > maxFiles;
    const message = byFiles
      ? `Upload quota exceeded (rule upload_quota_files): this account keeps ${files} unexpired uploads, the most allowed is ${maxFiles}; ` +
        `room frees as they expire (Retry-After), or reference images by public URL`
      : `Upload quota exceeded (rule upload_quota_bytes): this account's unexpired uploads hold ${formatBytes(used)}; ` +
        `with this image (${formatBytes(meta.bytes)}) they would exceed ${formatBytes(maxBytes)}; room frees as they expire (Retry-After), or reference images by public URL`;
    throw new DomainError('rate_limited', message, { rule: byFiles ? 'upload_quota_files' : 'upload_quota_bytes', retryAfter });
  }

  /** Takes back a reservation whose upload was not stored after all. */
  async release(meta: UploadMeta): Promise<void> {
    if (!this.enabled) return;
    await this.redis
      .eval(RELEASE_LUA, 2, ...this.keys(meta.accountId), memberOf(meta), String(meta.bytes))
      .catch((err: unknown) =>
        this.logger.warn({ err, accountId: meta.accountId }, 'upload quota: could not release a reservation; it expires with the upload'),
      );
  }

  private keys(accountId: string): [string, string] {
    const k = uploadQuotaKey(this.prefix, accountId);
    return [k, `${k}:bytes`];
  }
}

const memberOf = (meta: UploadMeta): string => `${storedName(meta)} ${meta.bytes}`;
