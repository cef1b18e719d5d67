import type { Response } from 'express';

/**
 * A JSON answer written directly: the headers `res.json` sets (Content-Type with charset, Content-Length) plus
 * `headers`, without its content-type parsing, freshness check and header lookups — for the busiest routes, the
 * task submissions and the poll (a few percent of their CPU, docs/benchmarks.md). Headers set before with
 * `res.setHeader` (X-Request-Id, the rate-limit headers) are kept.
 */
export function sendJson(res: Response, status: number, value: unknown, headers?: Readonly<Record<string, string>>): void {
  const body = JSON.stringify(value);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}
