import 'reflect-metadata';
import { loadPoolWorkerConfig, runPoolWorkerService } from '@gmg/tasks';
import { cutQuadrants } from './quadrants';

runPoolWorkerService('artgen', loadPoolWorkerConfig('artgen'), { cutQuadrants }).catch((e: unknown) => {
  console.error('worker-artgen failed to start:', e instanceof Error ? e.message : e);
  process.exit(1);
});
