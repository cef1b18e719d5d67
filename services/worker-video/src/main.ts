import 'reflect-metadata';
import { loadPoolWorkerConfig, runPoolWorkerService } from '@gmg/tasks';

runPoolWorkerService('video', loadPoolWorkerConfig('video')).catch((e: unknown) => {
  console.error('worker-video failed to start:', e instanceof Error ? e.message : e);
  process.exit(1);
});
