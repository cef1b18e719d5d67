import express, { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import multer from 'multer';
import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';
import { bodyBudgetGate, type BodyBudget } from '../http/body-budget';
import { lingerThenClose } from '../http/body-linger';
import { assertJsonDepth } from '../http/json-depth';
import { methodNotAllowed } from '../http/error-handler';
import { principalOf } from '../http/principal';
import { UploadSweeper } from './upload-sweeper';
import type { UploadStorage } from './upload-storage';
import type { UploadQuota } from './upload-quota';
import { underMount } from '../http/request-path';
import { UPLOADS_PATH, tooLarge, uploadImage, type UploadLimits } from './upload-image.use-case';

export interface UploadsRouterDeps {
  storage: UploadStorage;
  publicBaseUrl: string;
  limits: UploadLimits;
  /** Key auth for the POST (the GET is public: the unguessable name is the capability). */
  authenticate: RequestHandler;
  /** Files and bytes each account keeps through this route (UPLOAD_QUOTA_*); absent: unbounded. */
  quota?: UploadQuota;
  /** Run after auth on the POST, e.g. the per-key rate limit. */
  guards?: RequestHandler[];
  logger: Logger;
  /** The large bodies' budget (http/body-budget.ts): an upload waits for its share before it is read. */
  budget?: BodyBudget;
  /**
   * Removes expired files; every upload request pokes it (at most once per its interval). The app's own sweeper,
   * whose timer edge-timers.ts runs; absent, one of the router's own with `sweepIntervalMs` (default 10 min).
   */
  sweeper?: UploadSweeper;
  sweepIntervalMs?: number;
  now?: () => Date;
}

export const UPLOAD_IMAGES_PATH = `${UPLOADS_PATH}/images`;
const FILE_FIELD = 'file';
const JSON_FIELD = 'image';
const DATA_URI = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+)?(;[a-z0-9-]+=[^;,]*)*;base64,/i;
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Base64 (standard or URL-safe alphabet, optional data-URI prefix, whitespace tolerated) to bytes. */
export function decodeBase64Image(value: string): Buffer | undefined {
  const payload = value.replace(DATA_URI, '').replace(/\s+/g, '');
  if (payload.length === 0 || !BASE64.test(payload)) return undefined;
  return Buffer.from(payload, payload.includes('-') || payload.includes('_') ? 'base64url' : 'base64');
}

const MULTIPART_FIELDS = 16;
const MULTIPART_FIELD_BYTES = 64 * 1024;

/** The JSON form's cap: Base64 is 4/3 of the bytes, with headroom for the JSON around it (the decoded size is checked exactly afterwards). */
const jsonLimitOf = (limits: UploadLimits): number => Math.ceil((limits.maxBytes * 4) / 3) + 64 * 1024;

/**
 * The most an upload body can be in either form: a larger Content-Length cannot carry an image within the limit,
 * and is refused (413) before a byte of it is read.
 */
export const uploadBodyBound = (limits: UploadLimits): number =>
  Math.max(jsonLimitOf(limits), limits.maxBytes + (MULTIPART_FIELDS + 1) * MULTIPART_FIELD_BYTES);

/** Multipart (field `file`, in memory, capped) or JSON `{image}`; anything else is 415. */
function uploadBody(limits: UploadLimits): RequestHandler {
  const multipart = multer({
    storage: multer.memoryStorage(),
    limits: { fileSize: limits.maxBytes, files: 1, fields: MULTIPART_FIELDS, fieldSize: MULTIPART_FIELD_BYTES, parts: 32 },
  }).single(FILE_FIELD);
  const json = express.json({
    limit: jsonLimitOf(limits),
    type: ['application/json', '+json'],
    strict: true,
    verify: (_req, _res, buf) => assertJsonDepth(buf),
  });
  const bound = uploadBodyBound(limits);

  return (req: Request, res: Response, next: NextFunction) => {
    const declared = Number(req.headers['content-length']);
    if (declared > bound) {
      lingerThenClose(req, res);
      next(tooLarge(req.is('multipart/form-data') ? FILE_FIELD : JSON_FIELD, limits.maxBytes));
      return;
    }
    if (req.is('multipart/form-data')) {
      multipart(req, res, (err: unknown) => {
        if (!err) return next();
        if (err instanceof multer.MulterError) {
          if (err.code === 'LIMIT_FILE_SIZE') return next(tooLarge(FILE_FIELD, limits.maxBytes));
          const what =
            err.code === 'LIMIT_UNEXPECTED_FILE' ? `unexpected file field '${err.field ?? ''}': send one image in field \`${FILE_FIELD}\`` : err.message;
          return next(new DomainError('invalid_request', `Multipart upload refused: ${what}`, { field: FILE_FIELD }));
        }
        next(new DomainError('invalid_request', `Multipart body could not be read: ${(err as Error).message}`, { field: FILE_FIELD }));
      });
      return;
    }
    if (req.is(['application/json', '+json'])) {
      json(req, res, (err: unknown) => {
        const e = err as { type?: string } | undefined;
        if (e?.type === 'entity.too.large') return next(tooLarge(JSON_FIELD, limits.maxBytes));
        next(err);
      });
      return;
    }
    const type = req.headers['content-type'];
    if (type === undefined) {
      next(
        new DomainError(
          'invalid_request',
          `Send the image as multipart/form-data field \`${FILE_FIELD}\` or as JSON \`{"${JSON_FIELD}": "<base64 or data URI>"}\``,
          { field: FILE_FIELD },
        ),
      );
      return;
    }
    next(new DomainError('unsupported_media_type', `Content-Type must be multipart/form-data or application/json (got '${type}')`));
  };
}

function bytesOf(req: Request, limits: UploadLimits): { bytes: Buffer; field: string } {
  if (req.file) return { bytes: req.file.buffer, field: FILE_FIELD };
  if (req.is('multipart/form-data')) {
    throw new DomainError('invalid_request', `\`${FILE_FIELD}\` is required: the multipart body has no file in field \`${FILE_FIELD}\``, {
      field: FILE_FIELD,
      rule: 'required',
    });
  }
  const body = req.body as Record<string, unknown> | undefined;
  const value = body && typeof body === 'object' && !Array.isArray(body) ? body[JSON_FIELD] : undefined;
  if (typeof value !== 'string' || value.length === 0) {
    throw new DomainError('invalid_request', `\`${JSON_FIELD}\` is required: a Base64 string or a data URI (data:image/png;base64,…)`, {
      field: JSON_FIELD,
      rule: 'required',
    });
  }
  const bytes = decodeBase64Image(value);
  if (!bytes) throw new DomainError('invalid_request', `\`${JSON_FIELD}\` is not valid Base64 (plain or as a data URI)`, { field: JSON_FIELD, rule: 'base64' });
  if (bytes.length > limits.maxBytes) throw tooLarge(JSON_FIELD, limits.maxBytes);
  return { bytes, field: JSON_FIELD };
}

/**
 * `POST /v1/uploads/images` (key auth) and `GET /v1/uploads/<id>.<ext>` (public until it expires). Mounted at /v1/uploads
 * BEFORE the `/v1` key auth of the app so the GET stays public; the POST authenticates itself with `deps.authenticate`.
 */
export function createUploadsRouter(deps: UploadsRouterDeps): Router {
  const router = Router();
  const now = deps.now ?? (() => new Date());
  const sweeper = deps.sweeper ?? new UploadSweeper(deps.storage, deps.sweepIntervalMs ?? 10 * 60_000, deps.logger, now);

  const bound = uploadBodyBound(deps.limits);
  const gate = deps.budget ? [bodyBudgetGate(deps.budget, () => bound)] : [];
  router.post(underMount(UPLOADS_PATH, UPLOAD_IMAGES_PATH), deps.authenticate, ...(deps.guards ?? []), ...gate, uploadBody(deps.limits), async (req, res) => {
    const { bytes, field } = bytesOf(req, deps.limits);
    const data = await uploadImage(
      { storage: deps.storage, publicBaseUrl: deps.publicBaseUrl, limits: deps.limits, now, quota: deps.quota },
      { bytes, field, accountId: principalOf(res).accountId },
    );
    deps.logger.info({ uploadId: data.id, bytes: data.bytes, mime: data.mime }, 'image uploaded');
    sweeper.poke();
    res.status(200).json({ code: 200, data });
  });
  router.all(underMount(UPLOADS_PATH, UPLOAD_IMAGES_PATH), methodNotAllowed(['POST']));

  router.get('/:name', async (req, res, next) => {
    sweeper.poke();
    const found = await deps.storage.get(String(req.params.name), now());
    if (!found) {
      next(new DomainError('not_found', `Upload ${UPLOADS_PATH}/${String(req.params.name)} does not exist or has expired`));
      return;
    }
    const { meta, body } = found;
    const maxAge = Math.max(0, Math.floor((meta.expiresAt.getTime() - now().getTime()) / 1000));
    res.setHeader('Content-Type', meta.mime);
    res.setHeader('Content-Length', String(body.length));
    res.setHeader('Cache-Control', `public, max-age=${maxAge}, immutable`);
    res.setHeader('Expires', meta.expiresAt.toUTCString());
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Content-Disposition', 'inline');
    res.status(200).end(req.method === 'HEAD' ? undefined : body);
  });
  router.all('/:name', methodNotAllowed(['GET']));
  return router;
}
