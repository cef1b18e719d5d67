/**
 * Runs `shutdown` once on the first SIGTERM or SIGINT, then exits 0 (1 when shutdown threw).
 * A second signal exits at once: the operator insists. `hardTimeoutMs` bounds a hung shutdown.
 */
export function onShutdownSignals(
  shutdown: (signal: string) => Promise<void>,
  opts: { hardTimeoutMs?: number; log?: (msg: string, err?: unknown) => void } = {},
): void {
  let started = false;
  const handle = (signal: NodeJS.Signals): void => {
    if (started) {
      opts.log?.(`second ${signal}: exiting now`);
      process.exit(1);
    }
    started = true;
    opts.log?.(`${signal}: shutting down`);
    const timer = setTimeout(() => {
      opts.log?.('shutdown took too long: exiting');
      process.exit(1);
    }, opts.hardTimeoutMs ?? 60_000);
    timer.unref();
    shutdown(signal).then(
      () => process.exit(0),
      (e: unknown) => {
        opts.log?.('shutdown failed', e);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handle);
  process.on('SIGINT', handle);
}
