// the edge's composition root (app.ts) still takes it from here; its home is @gmg/db
export { toUnifiedTask } from '@gmg/db';
export { TaskViewStore } from './task-view.store';
export { TaskLifecycle } from './task-lifecycle';
export type { CompletionHandler } from './task-lifecycle';
export { loadPoolWorkerConfig } from './pool-worker.config';
export { runPoolWorkerService } from './pool-worker.service';
export { toArtgenNativeTask, artgenJobHash, artgenStatusOf, artgenParentFacts } from './artgen-native-task';
export { DEFAULT_POLL_INTERVAL_MS } from './step-timing';
