import { resolveModel, validateRequest, type ModelDefinition, type NormalizedRequest } from '@gmg/contracts';
import type { SimModels } from './submit.handler';

/**
 * Test-only registry: the real one plus two stub models, so the simulator's own behaviour (ack shape B, video files)
 * is tested without depending on which models the real registry has yet.
 */
function stub(id: string, endpoint: string, ack: 'A' | 'B', expected: (b: Record<string, unknown>) => NormalizedRequest['expected']): ModelDefinition {
  return {
    id,
    aliases: [],
    ownedBy: 'sim',
    created: 0,
    category: endpoint.includes('video') ? 'video' : 'image',
    capabilityTags: [],
    supportedEndpointTypes: [],
    pool: endpoint.includes('video') ? 'video' : 'image',
    contract: {
      operation: endpoint.includes('video') ? 'video_generation' : 'image_generation',
      method: 'POST',
      endpoint,
      schemaVersion: '2025-01-01',
      source: 'test',
      ack,
      pollIntervalMs: { min: 100, max: 100 },
      estimatedSeconds: 60,
      inputSchema: {},
      serverRules: [],
      maxBodyBytes: 1024 * 1024,
      inlineMedia: () => [],
      validate(body, requestedModel) {
        const b = body as Record<string, unknown>;
        if (typeof b.prompt !== 'string') {
          return { ok: false, violation: { status: 400, type: 'invalid_request_error', field: 'prompt', rule: 'required', message: '`prompt` is required' } };
        }
        const value: NormalizedRequest = {
          model: id,
          requestedModel,
          pool: 'image',
          upstreamBody: b,
          derived: {},
          billing: [],
          expected: expected(b),
        };
        return { ok: true, value };
      },
    },
  };
}

const STUBS = [
  stub('test-video', '/v1/videos/generations', 'A', (b) => ({ kind: 'videos', count: 1, format: 'mp4', durationSeconds: Number(b.duration ?? 5) })),
  stub('test-image-b', '/v1/images/generations', 'B', (b) => ({ kind: 'images', count: Number(b.n ?? 1), width: 320, height: 200, format: 'webp' })),
];

export const testModels: SimModels = {
  resolveModel: (name) => STUBS.find((m) => m.id === name) ?? resolveModel(name),
  validateRequest: (model, body, requested, opts) =>
    STUBS.includes(model) ? model.contract!.validate(body, requested, opts) : validateRequest(model, body, requested, opts),
};
