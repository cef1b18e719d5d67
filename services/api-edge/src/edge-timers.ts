import type { EdgeBackground } from './app';

/** What the edge runs in the background: its sweepers' timers. */
export interface EdgeTimers {
  /** Stops every timer and waits for a sweep in progress. */
  stop(): Promise<void>;
}

/**
 * Starts the edge's background timers (createApp starts none): the chat-call sweeper (expired credit leases,
 * abandoned calls), the upload sweeper (expired uploads, UPLOAD_SWEEP_INTERVAL_MS) and, on a local-disk result store,
 * the result sweeper (results older than their links, same interval). main.ts calls it once the
 * server listens and stops it at shutdown; the test harness does the same, so tests run the edge main.ts runs.
 */
export function startEdgeTimers(background: Pick<EdgeBackground, 'chatCallSweeper' | 'uploadSweeper' | 'resultSweeper'>): EdgeTimers {
  background.chatCallSweeper.start();
  background.uploadSweeper.start();
  background.resultSweeper?.start();
  return {
    async stop() {
      background.chatCallSweeper.stop();
      await background.uploadSweeper.stop();
      await background.resultSweeper?.stop();
    },
  };
}
