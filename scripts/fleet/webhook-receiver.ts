/**
 * The customers' webhook endpoint, on loopback: answers 200 to every delivery and counts them by task, so the end of
 * the run can check that each task with a callback_url got its delivery, and how many came twice (same
 * X-Delivery-Id: a retry after a lost answer; the receiver deduplicates on it, as docs/webhooks.md tells clients to).
 */
import http from 'node:http';
import { freePort } from '@gmg/testing';

export interface WebhookReceiver {
  url: string;
  /** task id → deliveries received (any attempt). */
  readonly byTask: Map<string, number>;
  /** Deliveries whose X-Delivery-Id was seen before. */
  duplicates(): number;
  total(): number;
  close(): Promise<void>;
}

const MAX_BODY = 1 << 20;

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const port = await freePort();
  const byTask = new Map<string, number>();
  const seen = new Set<string>();
  let dup = 0;
  let total = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('end', () => {
      total++;
      const id = String(req.headers['x-delivery-id'] ?? '');
      if (seen.has(id)) dup++;
      else seen.add(id);
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: { id?: string } };
        const task = body.data?.id;
        if (task) byTask.set(task, (byTask.get(task) ?? 0) + 1);
      } catch {
        // counted in total; a delivery without a task id fails the end-of-run check (its task shows none)
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}/hook`,
    byTask,
    duplicates: () => dup,
    total: () => total,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
