import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { UpstreamError } from '@gmg/errors';
import type { ChannelTarget } from '@gmg/upstream';
import { createSimApp } from '../app';

/** One request a vendor mode received (GET /__sim/vendor-requests), as the adapter tests read it. */
export interface SeenRequest {
  phase?: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** The simulator on 127.0.0.1:0 on the test's clock, and a channel of one protocol pointing at its mode. */
export interface VendorSim {
  origin: string;
  channel: ChannelTarget;
  /** What the vendor modes received so far, oldest first. */
  seen(): Promise<SeenRequest[]>;
  close(): Promise<void>;
}

/**
 * The set-up every adapter-against-simulator test shares: the app listens before it is built, so its `publicUrl`
 * (the vendor's result links) names the real port; `now` is the test's clock, moved instead of waiting on wall time.
 */
export async function listenVendorSim(
  protocol: string,
  opts: { apiKey: string; now: () => number; timeScale?: number; id?: string; name?: string },
): Promise<VendorSim> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  server.on('request', createSimApp({ timeScale: opts.timeScale ?? 1, publicUrl: origin, apiKey: opts.apiKey, now: opts.now }));
  return {
    origin,
    channel: {
      id: opts.id ?? `${protocol}-1`,
      name: opts.name ?? `${protocol}-sim`,
      protocol,
      baseUrl: `${origin}/${protocol}`,
      apiKey: opts.apiKey,
      modelMap: {},
      settings: {},
    },
    seen: async () => ((await (await fetch(`${origin}/__sim/vendor-requests`)).json()) as { requests: SeenRequest[] }).requests,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** The UpstreamError a call rejected with, or undefined when it succeeded. */
export const failure = (p: Promise<unknown>): Promise<UpstreamError | undefined> =>
  p.then(
    () => undefined,
    (e: unknown) => e as UpstreamError,
  );
