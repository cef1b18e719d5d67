import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import express from 'express';
import request from 'supertest';
import { createLogger } from '@gmg/logger';
import { waitFor } from '@gmg/testing';
import { accessLog } from './access-log';

function appWithLog() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    service: 'test',
    destination: new Writable({
      write(chunk, _enc, cb) {
        lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
        cb();
      },
    }),
  });
  const app = express();
  app.use(accessLog(logger, (p) => p === '/healthz'));
  let reached: () => void = () => undefined;
  const hung = new Promise<void>((r) => {
    reached = r;
  });
  app.get('/healthz', (req, res) => {
    res.json({ id: req.id });
  });
  app.get('/v1/tasks/:id', (req, res) => {
    res.json({ id: req.id });
  });
  app.get('/v1/boom', (_req, res) => {
    res.status(503).json({});
  });
  app.get('/v1/hang', () => {
    reached();
  });
  return { app, lines, hung };
}

describe('accessLog', () => {
  it('gives the response an X-Request-Id equal to req.id and logs one line of five fields, without headers or the raw path', async () => {
    const { app, lines } = appWithLog();
    const res = await request(app).get('/v1/tasks/task_secretname123').set('Authorization', 'Bearer sk-live-abcdef');
    expect(res.status).toBe(200);
    expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
    expect(res.body.id).toBe(res.headers['x-request-id']);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: 'request completed',
      reqId: res.headers['x-request-id'],
      method: 'GET',
      route: '/v1/tasks/:id',
      status: 200,
    });
    expect(typeof lines[0].ms).toBe('number');
    const text = JSON.stringify(lines);
    expect(text).not.toContain('sk-live-abcdef');
    expect(text).not.toContain('task_secretname123');
  });

  it('logs a 5xx at error level and gives each request its own id', async () => {
    const { app, lines } = appWithLog();
    const a = await request(app).get('/v1/boom');
    const b = await request(app).get('/v1/boom');
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
    expect(lines.map((l) => [l.level, l.status, l.msg])).toEqual([
      [50, 503, 'request failed'],
      [50, 503, 'request failed'],
    ]);
  });

  it('gives a quiet path an id but no log line', async () => {
    const { app, lines } = appWithLog();
    const res = await request(app).get('/healthz');
    expect(res.headers['x-request-id']).toMatch(/^req_/);
    expect(lines).toHaveLength(0);
  });

  it('logs a request the client abandoned as aborted', async () => {
    const { app, lines, hung } = appWithLog();
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const req = http.get({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: '/v1/hang' });
      req.on('error', () => undefined);
      await hung;
      req.destroy();
      await waitFor(() => lines.length > 0, { timeoutMs: 5000, what: 'the aborted line' });
      expect(lines[0]).toMatchObject({ level: 40, msg: 'request aborted', aborted: true, method: 'GET', route: '/v1/hang' });
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
