import Joi from 'joi';
import { env } from './env';

/**
 * The result store (results kept by us, docs/upstreams/results.md): the edge serves it, the workers write it, so
 * both read the same keys with the same rules. RESULT_SIGNING_KEY is a secret: no default (npm start generates one).
 */
export interface ResultStoreEnv {
  RESULT_STORE_URL: string;
  RESULT_SIGNING_KEY: string;
  RESULT_LINK_TTL_SECONDS: number;
  RESULT_STORE_ENDPOINT?: string;
  RESULT_STORE_REGION: string;
  RESULT_STORE_FORCE_PATH_STYLE: boolean;
}

export const resultStoreSchema = {
  // s3://bucket/prefix, file:///abs/dir, or a path (relative: the working directory's)
  RESULT_STORE_URL: Joi.string()
    .min(1)
    .default('.data/results')
    .pattern(/^(s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/.*)?|file:\/\/\/.+|[^:]+)$/, { name: 's3://bucket/prefix, file:///dir or a path' }),
  // Whoever holds it can mint a link to any kept result: long, and never a copied placeholder.
  RESULT_SIGNING_KEY: env.secret(32).required(),
  RESULT_LINK_TTL_SECONDS: env.int(60, 30 * 86400, 86400),
  RESULT_STORE_ENDPOINT: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .empty(''),
  RESULT_STORE_REGION: Joi.string().empty('').default('us-east-1'),
  RESULT_STORE_FORCE_PATH_STYLE: env.bool(false),
};
