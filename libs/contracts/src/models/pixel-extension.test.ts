import { resolveModel, validateRequest } from '../index';

describe('pixel-v6 extend_from_task_id', () => {
  const pixel = resolveModel('pixel-v6')!;
  it('keeps the source in derived facts in extension mode', () => {
    const v = validateRequest(pixel, { model: 'pixel-v6', prompt: 'go on', extend_from_task_id: 'task_abc' }, 'pixel-v6');
    if (!v.ok) throw new Error(v.violation.message);
    expect(v.value.derived).toMatchObject({ mode: 'extension', extendFromTaskId: 'task_abc' });
  });
  it('drops the field from the upstream body when an earlier mode wins (image-to-video)', () => {
    const v = validateRequest(
      pixel,
      { model: 'pixel-v6', prompt: 'p', image_urls: ['https://example.com/a.png'], extend_from_task_id: 'task_abc' },
      'pixel-v6',
    );
    if (!v.ok) throw new Error(v.violation.message);
    expect(v.value.derived.mode).toBe('image-to-video');
    expect(v.value.upstreamBody).not.toHaveProperty('extend_from_task_id');
    expect(v.value.upstreamBody).toMatchObject({ model: 'pixel-v6', image_urls: ['https://example.com/a.png'] });
  });
});
