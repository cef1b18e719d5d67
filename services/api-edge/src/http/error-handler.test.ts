import { Writable } from 'node:stream';
import express from 'express';
import request from 'supertest';
import { DomainError, violationError } from '@gmg/errors';
import { createLogger } from '@gmg/logger';
import { errorHandler, routeNotFound } from './error-handler';

function appThrowing(err: unknown, lines: string[] = []) {
  const logger = createLogger({
    service: 'test',
    destination: new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    }),
  });
  const app = express();
  const fail: express.RequestHandler = () => {
    throw err;
  };
  app.get('/v1/x', fail);
  app.get('/v1/artgen/x', fail);
  app.get('/v1/chat/completions', fail);
  app.use(routeNotFound);
  app.use(errorHandler(logger));
  return app;
}

describe('errorHandler', () => {
  it('answers 503 with Retry-After, not 500, when a dependency is down (socket, SQLSTATE, pooler, wrapped by TypeORM, Redis)', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6432'), { code: 'ECONNREFUSED' });
    const pooler = Object.assign(new Error('server conn crashed?'), { code: '08P01' });
    const wrapped = Object.assign(new Error('Query failed'), { driverError: new Error('Connection terminated unexpectedly') });
    const redis = Object.assign(new Error('Reached the max retries per request limit (which is 1).'), { name: 'MaxRetriesPerRequestError' });
    for (const err of [refused, pooler, wrapped, redis]) {
      const lines: string[] = [];
      const res = await request(appThrowing(err, lines)).get('/v1/x');
      expect([res.status, res.headers['retry-after'], res.body.error.type]).toEqual([503, '1', 'service_unavailable']);
      expect(lines.join('')).toContain(err.message.slice(0, 20)); // the cause is logged
    }
    // a bug stays a 500
    expect((await request(appThrowing(Object.assign(new Error('boom'), { code: '23505' }))).get('/v1/x')).status).toBe(500);
  });

  it('maps a 422 contract violation to 422 invalid_request_error in the standard shape', async () => {
    const err = violationError({
      status: 422,
      type: 'invalid_request_error',
      field: 'image_urls',
      rule: 'exclusive',
      message: 'image-to-video and multimodal fields together',
    });
    const res = await request(appThrowing(err)).get('/v1/x');
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error: { code: 422, type: 'invalid_request_error', message: 'image-to-video and multimodal fields together' } });
  });

  it('keeps the spec type of model-specific 400 violations (invalid_duration)', async () => {
    const err = violationError({ status: 400, type: 'invalid_duration', field: 'duration', rule: 'enum', message: '`duration` must be 4, 6, 8 or 10' });
    const res = await request(appThrowing(err)).get('/v1/x');
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual({ code: 400, type: 'invalid_duration', message: '`duration` must be 4, 6, 8 or 10' });
  });

  it("answers on /v1/chat/completions in that protocol's envelope: param and code from the field and rule, null otherwise", async () => {
    const bad = await request(appThrowing(new DomainError('invalid_request', '`n` is not supported', { field: 'n', rule: 'unsupported_parameter' }))).get(
      '/v1/chat/completions',
    );
    expect([bad.status, bad.body]).toEqual([
      400,
      { error: { message: '`n` is not supported', type: 'invalid_request_error', param: 'n', code: 'unsupported_parameter' } },
    ]);
    const crash = await request(appThrowing(new Error('boom'))).get('/v1/chat/completions');
    expect(crash.status).toBe(500);
    expect(crash.body).toEqual({
      error: { message: expect.stringMatching(/^Internal server error \(error id err_/), type: 'server_error', param: null, code: null },
    });
  });

  it('sets Retry-After when details.retryAfter is given', async () => {
    const res = await request(appThrowing(new DomainError('rate_limited', 'slow down', { retryAfter: 2.2 }))).get('/v1/x');
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('3');
    expect(res.body.error.type).toBe('rate_limit_error');
  });

  it('answers art-suite paths without `code` and with the art-suite type names', async () => {
    const nf = await request(appThrowing(new DomainError('task_not_found', 'Task task_x not found'))).get('/v1/artgen/x');
    expect(nf.status).toBe(404);
    expect(nf.body).toEqual({ error: { type: 'not_found', message: 'Task task_x not found' } });
    const boom = await request(appThrowing(new Error('kaput'))).get('/v1/artgen/x');
    expect(boom.status).toBe(500);
    expect(boom.body.error).toEqual({ type: 'internal_error', message: expect.stringMatching(/error id err_/) });
  });

  it('turns an unexpected error into 500 server_error whose error id is also in the log, without the internal message', async () => {
    const lines: string[] = [];
    const res = await request(appThrowing(new Error('secret internals'), lines)).get('/v1/x');
    expect(res.status).toBe(500);
    expect(res.body.error).toMatchObject({ code: 500, type: 'server_error' });
    expect(res.body.error.message).not.toContain('secret internals');
    const errorId = /error id (err_[0-9a-f-]+)/.exec(res.body.error.message)![1];
    expect(lines.some((l) => l.includes(errorId) && l.includes('secret internals'))).toBe(true);
  });

  it('answers an unknown route with 404 not_found_error', async () => {
    const res = await request(appThrowing(new Error('unused'))).post('/v1/unknown');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: { code: 404, type: 'not_found_error', message: 'No route for POST /v1/unknown' } });
  });
});
