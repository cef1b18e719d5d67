import 'reflect-metadata';
import { AssetRepository } from '@gmg/db';
import { loadPoolWorkerConfig, runPoolWorkerService } from '@gmg/tasks';
import { AvatarReviewHandler } from './avatar-review.handler';

runPoolWorkerService('avatar', loadPoolWorkerConfig('avatar'), {
  completion: (ds) => new AvatarReviewHandler(new AssetRepository(ds)),
}).catch((e: unknown) => {
  console.error('worker-avatar failed to start:', e instanceof Error ? e.message : e);
  process.exit(1);
});
