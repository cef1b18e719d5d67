import express from 'express';
import request from 'supertest';
import { DomainError } from '@gmg/errors';
import { renderMetrics } from '@gmg/observability';
import { errorHandler } from '../http/error-handler';
import { submitMetricsMiddleware } from './submit-metrics';

/** An app whose submit route answers what the body asks for, through the real error handler. */
function app() {
  const a = express();
  const logger = { error: () => undefined, warn: () => undefined, info: () => undefined } as never;
  a.post(['/v1/images/generations', '/v1/artgen/generations'], submitMetricsMiddleware, express.json(), (req, res) => {
    const want = (req.body as { want?: string }).want;
    if (want === '402') throw new DomainError('payment_required', 'Insufficient balance');
    if (want === '429') throw new DomainError('rate_limited', 'slow down', { retryAfter: 1 });
    if (want === '400') throw new DomainError('invalid_request', 'bad', { field: 'prompt' });
    if (want === '500') throw new Error('bug');
    res.json({ ok: true });
  });
  a.use(errorHandler(logger));
  return a;
}

const count = async (model: string, outcome: string): Promise<number> => {
  const { body } = await renderMetrics();
  const line = body.split('\n').find((l) => l.startsWith(`gmg_submits_total{model="${model}",outcome="${outcome}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
};

describe('gmg_submits_total', () => {
  it.each([
    ['lumen-2-pro', undefined, 'lumen-2-pro', 'accepted'],
    ['lumen-2-pro', '402', 'lumen-2-pro', 'payment_required'],
    ['lumen-2-flex', '429', 'lumen-2-flex', 'rate_limited'],
    ['lumen-2-flex', '400', 'lumen-2-flex', 'invalid_request_error'],
    ['lumen-2-flex', '500', 'lumen-2-flex', 'server_error'],
    ['no-such-model-123', undefined, 'other', 'accepted'],
  ])('counts a submit of %s answered %s as {model=%s, outcome=%s}', async (model, want, label, outcome) => {
    const before = await count(label, outcome);
    await request(app()).post('/v1/images/generations').send({ model, want });
    expect(await count(label, outcome)).toBe(before + 1);
  });

  it('labels the art suite (no model in the body) `artgen`, never a raw client string', async () => {
    const before = await count('artgen', 'accepted');
    await request(app()).post('/v1/artgen/generations').send({ prompt: 'x' });
    expect(await count('artgen', 'accepted')).toBe(before + 1);
  });
});
