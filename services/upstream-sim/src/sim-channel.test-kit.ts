import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChannelTarget } from '@gmg/upstream';
import { createSimApp } from './app';

/** Test helper (not a test file itself): the simulator on a loopback port, and the gateway channel that reaches it. */
export interface SimChannel {
  channel: ChannelTarget;
  close(): Promise<void>;
}

/** The simulator at time scale 0.05 guarded by `apiKey`, listening on a free port; close() in afterAll. */
export async function listenSimChannel(apiKey: string): Promise<SimChannel> {
  const app = createSimApp({ timeScale: 0.05, publicUrl: 'http://127.0.0.1:1', apiKey });
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    channel: {
      id: 'sim',
      name: 'sim',
      protocol: 'gateway',
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      apiKey,
      modelMap: {},
      settings: {},
    },
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
