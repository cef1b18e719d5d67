import Joi from 'joi';

/** An integer from `min` to `max`, `def` when unset: the shape of most variables (sizes, counts, durations). */
const int = (min: number, max: number, def: number) => Joi.number().integer().min(min).max(max).default(def);

/** Env fragments shared by services. Secrets have no defaults. */
export const env = {
  databaseUrl: () =>
    Joi.string()
      .uri({ scheme: ['postgres', 'postgresql'] })
      .default('postgres://postgres@127.0.0.1:5432/gmg'),
  redisUrl: () =>
    Joi.string()
      .uri({ scheme: ['redis', 'rediss'] })
      .default('redis://127.0.0.1:6379'),
  logLevel: () => Joi.string().valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent').default('info'),
  logFlushMs: () => int(0, 5000, 100),
  port: (def: number) => int(0, 65535, def),
  int,
  positiveInt: (def: number) => Joi.number().integer().min(1).default(def),
  bool: (def: boolean) => Joi.boolean().truthy('1', 'yes', 'on').falsy('0', 'no', 'off').default(def),
  /** A secret: at least `min` characters, and never a copied placeholder (no default: each caller says required or not). */
  secret: (min: number) =>
    Joi.string()
      .min(min)
      .pattern(/change-?me/i, { invert: true, name: 'placeholder' }),
};
