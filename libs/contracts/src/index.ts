export * from './queues';
export * from './task';
export * from './error-types';
export * from './models/types';
export * from './pricing';
export * from './models/registry';
export * from './media-url';
