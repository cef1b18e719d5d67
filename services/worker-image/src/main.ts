import 'reflect-metadata';
import { loadPoolWorkerConfig, runPoolWorkerService } from '@gmg/tasks';

runPoolWorkerService('image', loadPoolWorkerConfig('image')).catch((e: unknown) => {
  console.error('worker-image failed to start:', e instanceof Error ? e.message : e);
  process.exit(1);
});
