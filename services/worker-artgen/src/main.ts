import 'reflect-metadata';
import { runPoolWorkerService } from '@gmg/tasks';
import { loadWorkerConfig } from './config';
import { cutQuadrants } from './quadrants';

runPoolWorkerService('artgen', loadWorkerConfig(), { cutQuadrants }).catch((e: unknown) => {
  console.error('worker-artgen failed to start:', e instanceof Error ? e.message : e);
  process.exit(1);
});
