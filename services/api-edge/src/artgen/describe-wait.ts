import { isTerminal, type TaskView } from '@gmg/contracts';

export interface DescribeWaitDeps {
  views: { read(id: string): Promise<TaskView | null> };
}

/** Poll cadence of the wait: starts short (describe takes 1–3 s upstream), grows to a cap. */
const FIRST_DELAY_MS = 50;
const MAX_DELAY_MS = 500;
/** Bounds the loop by count too, whatever the clock does. */
const MAX_ROUNDS = 2000;

/**
 * Waits until a task's Redis view (written by the worker at every change) is terminal, or `timeoutMs` passes.
 * Returns whether it ended. Reading the view costs one GET; no Postgres while waiting.
 */
export async function waitForTerminalView(deps: DescribeWaitDeps, taskId: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let delay = FIRST_DELAY_MS;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const view = await deps.views.read(taskId).catch(() => null);
    if (view && isTerminal(view.task.status)) return true;
    const left = deadline - Date.now();
    if (left <= 0) return false;
    await new Promise((resolve) => setTimeout(resolve, Math.min(delay, left)));
    delay = Math.min(MAX_DELAY_MS, Math.round(delay * 1.5));
  }
  return false;
}
