export { toUnifiedTask } from './unified-task';
export { TaskViewStore } from './task-view.store';
export { TaskLifecycle } from './task-lifecycle';
export type { CompletionHandler } from './task-lifecycle';
export { poolWorkerEnvSchema } from './pool-worker.config';
export type { PoolWorkerConfig } from './pool-worker.config';
export { runPoolWorkerService } from './pool-worker.service';
export { toArtgenNativeTask, artgenJobHash, artgenStatusOf, artgenParentFacts } from './artgen-native-task';
export { SweepKeeper } from './sweep-keeper';
