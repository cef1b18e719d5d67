import type { MediaKeeper } from '@gmg/upstream';

/** The keeper of worker tests whose upstream (the gateway protocol) hands back no files: any call is a test bug. */
export const NO_MEDIA_KEEPER: MediaKeeper = {
  keep: () => Promise.reject(new Error('this test keeps no media: its upstream answered files')),
};
