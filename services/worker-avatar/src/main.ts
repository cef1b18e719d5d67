import 'reflect-metadata';
import { runPoolWorkerService } from '@gmg/tasks';
import { loadWorkerConfig } from './config';

runPoolWorkerService('avatar', loadWorkerConfig()).catch((e: unknown) => {
  console.error('worker-avatar failed to start:', e instanceof Error ? e.message : e);
  process.exit(1);
});
