import { createLogger } from '@gmg/logger';
import { createSimApp } from './app';
import { loadSimConfig } from './config';
import { clearVendorCallbacks } from './vendors/vendor-sim-kit';

function main(): void {
  const config = loadSimConfig();
  const log = createLogger({ service: 'upstream-sim', level: config.logLevel });
  const app = createSimApp({
    timeScale: config.timeScale,
    publicUrl: config.publicUrl,
    apiKey: config.apiKey,
    extraApiKeys: config.extraApiKeys,
    maxTasks: config.maxTasks,
    vendorLinkTtlMs: config.vendorLinkTtlMs,
    logger: log,
    messages: { fault: config.messagesFault, slowDeltaMs: config.messagesSlowDeltaMs },
  });
  const server = app.listen(config.port, () => {
    log.info({ port: config.port, timeScale: config.timeScale, publicUrl: config.publicUrl, auth: Boolean(config.apiKey) }, 'upstream-sim listening');
  });
  server.on('error', (err) => {
    log.fatal({ err }, 'upstream-sim could not listen');
    process.exit(1);
  });
  const stop = (signal: string) => {
    log.info({ signal }, 'upstream-sim stopping');
    clearVendorCallbacks();
    server.close(() => process.exit(0));
    server.closeIdleConnections();
    setTimeout(() => process.exit(0), 5000).unref();
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

main();
