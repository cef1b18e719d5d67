export { toUnifiedTask } from './unified-task';
export { TaskViewStore, TASK_VIEW_TTL_SECONDS } from './task-view.store';
