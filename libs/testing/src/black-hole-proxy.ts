import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy in front of a real server (a test's Redis) that can turn into a black hole: connections stay open,
 * nothing sent either way arrives and nothing comes back — packets lost on the network, not a refusal (issue 38). A
 * client sees no error, no close: only its own timeouts can notice. As TCP retransmits once the path is back, the
 * held bytes arrive after `restore()`.
 */
export interface BlackHoleProxy {
  port: number;
  url: string;
  /** From now on every byte either way is held (open connections stay open). */
  blackHole(): void;
  /** Forwarding again, the held bytes first (connections still open and new ones). */
  restore(): void;
  close(): Promise<void>;
}

export async function startBlackHoleProxy(target: { host?: string; port: number }): Promise<BlackHoleProxy> {
  let holed = false;
  const sockets = new Set<net.Socket>();
  const hold = (s: net.Socket): void => {
    if (holed) s.pause();
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host ?? '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    hold(client);
    hold(upstream);
    client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => client.write(d));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    blackHole: () => {
      holed = true;
      for (const s of sockets) s.pause();
    },
    restore: () => {
      holed = false;
      for (const s of sockets) s.resume();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
