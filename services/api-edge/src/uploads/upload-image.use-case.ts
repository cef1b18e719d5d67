import { randomBytes } from 'node:crypto';
import { DomainError } from '@gmg/errors';
import { inspectImage } from './image-sniff';
import { storedName, type UploadMeta, type UploadStorage } from './upload-storage';

export interface UploadLimits {
  maxBytes: number;
  /** Per side, inclusive. */
  minSide: number;
  maxSide: number;
  ttlSeconds: number;
}

export const DEFAULT_SIDE_LIMITS = { minSide: 16, maxSide: 16384 } as const;

/** Path under the public base URL where uploads are served; also the trusted prefix of contract validation. */
export const UPLOADS_PATH = '/v1/uploads';

export interface UploadImageDeps {
  storage: UploadStorage;
  /** Absolute, no trailing slash. */
  publicBaseUrl: string;
  limits: UploadLimits;
  now?: () => Date;
  newId?: () => string;
  /** The per-account quota (UploadQuota, upload-quota.ts), checked after the image passed every other check. */
  quota?: { reserve(meta: UploadMeta, now: Date): Promise<void>; release(meta: UploadMeta): Promise<void> };
}

export interface UploadImageInput {
  bytes: Buffer;
  accountId: string;
  /** The request field the bytes came from (`file` or `image`), named in errors. */
  field: string;
}

export interface UploadResponseData {
  url: string;
  id: string;
  mime: string;
  bytes: number;
  width: number;
  height: number;
  /** Unix seconds. */
  expires_at: number;
}

/** 192 random bits, URL-safe: the link is the only capability needed to read the upload. */
export const newUploadId = (): string => `img_${randomBytes(24).toString('base64url')}`;

const MIB = 1024 * 1024;
export const formatBytes = (n: number): string => (n % MIB === 0 ? `${n / MIB} MiB` : `${n} bytes`);

export function tooLarge(field: string, maxBytes: number): DomainError {
  return new DomainError('payload_too_large', `\`${field}\`: the image is larger than the limit of ${formatBytes(maxBytes)}`, { field });
}

/**
 * Checks an uploaded image (size, type from the bytes, dimensions) and stores it; answers the public link.
 * Every refusal names the field and what is allowed.
 */
export async function uploadImage(deps: UploadImageDeps, input: UploadImageInput): Promise<UploadResponseData> {
  const { limits } = deps;
  const { bytes, field } = input;
  if (bytes.length === 0) throw new DomainError('invalid_request', `\`${field}\` is empty: send a JPEG, PNG, WEBP or BMP image`, { field });
  if (bytes.length > limits.maxBytes) throw tooLarge(field, limits.maxBytes);

  const image = inspectImage(bytes);
  if (!image) {
    throw new DomainError(
      'invalid_request',
      `\`${field}\` is not a JPEG, PNG, WEBP or BMP image (the type is read from the file's bytes, not from its name or declared type)`,
      {
        field,
        rule: 'type',
      },
    );
  }
  for (const [side, v] of [
    ['width', image.width],
    ['height', image.height],
  ] as const) {
    if (v < limits.minSide || v > limits.maxSide) {
      throw new DomainError('invalid_request', `\`${field}\`: image ${side} ${v} px is outside ${limits.minSide}..${limits.maxSide} px`, {
        field,
        rule: 'dimensions',
      });
    }
  }

  const now = (deps.now ?? (() => new Date()))();
  const meta: UploadMeta = {
    id: (deps.newId ?? newUploadId)(),
    ext: image.ext,
    mime: image.mime,
    bytes: bytes.length,
    width: image.width,
    height: image.height,
    accountId: input.accountId,
    createdAt: now,
    expiresAt: new Date(now.getTime() + limits.ttlSeconds * 1000),
  };
  await deps.quota?.reserve(meta, now);
  try {
    await deps.storage.put(meta, bytes);
  } catch (err) {
    await deps.quota?.release(meta);
    throw err;
  }
  return {
    url: `${deps.publicBaseUrl}${UPLOADS_PATH}/${storedName(meta)}`,
    id: meta.id,
    mime: meta.mime,
    bytes: meta.bytes,
    width: meta.width,
    height: meta.height,
    expires_at: Math.floor(meta.expiresAt.getTime() / 1000),
  };
}
