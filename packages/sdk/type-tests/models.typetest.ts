/**
 * Compile-time proof that requests are typed per model: `npm test`'s typecheck (tsc -p tsconfig.json) compiles this
 * file, and every `@ts-expect-error` line must be an error or tsc fails ("Unused '@ts-expect-error' directive").
 * packages/sdk/test/type-tests.test.ts also compiles it with the directives removed and checks each line errs.
 * Nothing here runs: the calls sit in a function that is never called (nor exported).
 */
import { GatewayClient } from '../src/index.js';

function _typeTests(gmg: GatewayClient): void {
  // fine: each model with its own fields
  void gmg.images.generate({ model: 'lumen-2-pro', prompt: 'a lighthouse', size: '16:9', resolution: '1MP' });
  void gmg.images.generate({ model: 'lumen-2-flex', prompt: 'a lighthouse', steps: 20, guidance: 3.5 });
  void gmg.images.generate({ model: 'pict-image-2-ext', prompt: 'an alias is a model name too' });
  void gmg.videos.generate({ model: 'pixel-v6', prompt: 'waves', duration: 8, resolution: '720p' });
  void gmg.artgen.upscale({ task_id: 'task_abc', index: 2 });

  // @ts-expect-error `steps` is a lumen-2-flex field; lumen-2-pro refuses it
  void gmg.images.generate({ model: 'lumen-2-pro', prompt: 'a lighthouse', steps: 20 });
  // @ts-expect-error `duration` belongs to video models, not to an image model
  void gmg.images.generate({ model: 'lumen-2-pro', prompt: 'a lighthouse', duration: 5 });
  // @ts-expect-error an enum value the model does not take
  void gmg.images.generate({ model: 'lumen-2-pro', prompt: 'a lighthouse', output_format: 'gif' });
  // @ts-expect-error a model that is not an image model
  void gmg.images.generate({ model: 'pixel-v6', prompt: 'waves' });
  // @ts-expect-error `prompt` is required
  void gmg.images.generate({ model: 'lumen-2-pro' });
  // @ts-expect-error `resolution` of pixel-v6 is 360p/540p/720p/1080p
  void gmg.videos.generate({ model: 'pixel-v6', prompt: 'waves', resolution: '4MP' });
  // @ts-expect-error upscale needs `index`
  void gmg.artgen.upscale({ task_id: 'task_abc' });
  // @ts-expect-error blend takes no prompt
  void gmg.artgen.blend({ image_urls: ['https://a.example/1.png', 'https://a.example/2.png'], prompt: 'no' });
}
