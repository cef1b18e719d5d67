import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A forward HTTP proxy on 127.0.0.1 for tests of outbound proxies (a channel's `settings.proxy`): it tunnels
 * `CONNECT host:port` and forwards absolute-form requests (`GET http://host/path`), to loopback targets only (a test
 * never reaches the internet), and counts what went through it. With `auth` (`user:password`) it answers 407 to a
 * request without that `Proxy-Authorization: Basic`.
 */
export interface ForwardProxy {
  port: number;
  /** `http://127.0.0.1:<port>`, or with `user:password@` when the proxy takes credentials. */
  url: string;
  /** The `host:port` of every tunnel opened (CONNECT), in order. */
  readonly tunnels: readonly string[];
  /** The absolute URL of every forwarded request, in order. */
  readonly requests: readonly string[];
  /** Requests and tunnels refused (bad or missing credentials, a target off loopback). */
  readonly refused: number;
  /** Tunnels plus forwarded requests. */
  count(): number;
  /**
   * True when a connection from this local port to a target is one the proxy opened: a server behind it tells
   * which of its requests came through the proxy (`req.socket.remotePort`), tunnelled ones included.
   */
  carried(remotePort: number | undefined): boolean;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export async function startForwardProxy(opts: { auth?: string } = {}): Promise<ForwardProxy> {
  const tunnels: string[] = [];
  const requests: string[] = [];
  let refused = 0;
  const sockets = new Set<net.Socket>();
  const ports = new Set<number>();
  const own = (s: net.Socket): void => {
    if (s.localPort !== undefined) ports.add(s.localPort);
  };
  const track = (s: net.Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const expected = opts.auth === undefined ? undefined : `Basic ${Buffer.from(opts.auth).toString('base64')}`;
  const allowed = (h: http.IncomingHttpHeaders): boolean => expected === undefined || h['proxy-authorization'] === expected;

  const server = http.createServer((req, res) => {
    let target: URL;
    try {
      target = new URL(req.url ?? '');
    } catch {
      refused++;
      res.writeHead(400).end('absolute-form URL expected');
      return;
    }
    if (!allowed(req.headers) || !LOOPBACK.has(target.hostname)) {
      refused++;
      res.writeHead(allowed(req.headers) ? 403 : 407, { 'proxy-authenticate': 'Basic' }).end();
      return;
    }
    requests.push(target.href);
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    delete headers['proxy-connection'];
    const out = http.request(target, { method: req.method, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    out.on('socket', (s) => (s.connecting ? s.once('connect', () => own(s)) : own(s)));
    out.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
    req.pipe(out);
  });
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    track(client);
    const [host, port] = splitHostPort(req.url ?? '');
    if (!allowed(req.headers) || !LOOPBACK.has(host)) {
      refused++;
      client.end(`HTTP/1.1 ${allowed(req.headers) ? '403 Forbidden' : '407 Proxy Authentication Required'}\r\n\r\n`);
      return;
    }
    tunnels.push(req.url ?? '');
    const upstream = net.connect(port, host.replace(/^\[|\]$/g, ''), () => {
      own(upstream);
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    track(upstream);
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
  });
  server.on('connection', track);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://${opts.auth === undefined ? '' : `${opts.auth}@`}127.0.0.1:${port}`,
    tunnels,
    requests,
    get refused() {
      return refused;
    },
    count: () => tunnels.length + requests.length,
    carried: (remotePort) => remotePort !== undefined && ports.has(remotePort),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function splitHostPort(authority: string): [string, number] {
  const i = authority.lastIndexOf(':');
  return i < 0 ? [authority, 443] : [authority.slice(0, i), Number(authority.slice(i + 1))];
}
