import request from 'supertest';
import { createSimApp } from '../../app';

/** The bfl mode refuses what BFL refuses (its 403, 404 and FastAPI 422 shapes); a manual clock drives the task. */
describe('upstream-sim bfl mode (strict)', () => {
  let t = 1_700_000_000_000;
  const app = createSimApp({ timeScale: 1, publicUrl: 'http://sim.test:9090', apiKey: 'k-123', now: () => t });
  const post = (model: string, body: unknown, key: string | null = 'k-123') => {
    const r = request(app).post(`/bfl/v1/${model}`);
    return (key ? r.set('x-key', key) : r).send(body as object);
  };
  const problems = async (model: string, body: unknown) => {
    const res = await post(model, body).expect(422);
    return (res.body.detail as { loc: (string | number)[]; type: string }[]).map((d) => `${d.loc.join('.')}:${d.type}`);
  };

  it('needs the right x-key (403 {detail}); an endpoint it does not have is 404 whatever the key', async () => {
    expect((await post('flux-2-pro', { prompt: 'x' }, null).expect(403)).body).toEqual({ detail: 'Not authenticated' });
    await post('flux-2-pro', { prompt: 'x' }, 'wrong').expect(403);
    await request(app).get('/bfl/v1/get_result?id=x').expect(403);
    expect((await post('flux-9', { prompt: 'x' }, null).expect(404)).body).toEqual({ detail: 'Not Found' });
  });

  it('answers 422 with every problem of the body, as FastAPI does', async () => {
    expect(await problems('flux-2-pro', {})).toEqual(['body.prompt:missing']);
    expect(await problems('flux-2-pro', [1])).toEqual(['body:model_attributes_type']);
    expect(await problems('flux-2-pro', { prompt: 7, seed: 1.5, prompt_upsampling: 'yes', output_format: 'gif' })).toEqual([
      'body.prompt:string_type',
      'body.seed:int_type',
      'body.prompt_upsampling:bool_type',
      'body.output_format:enum',
    ]);
    expect(await problems('flux-2-pro', { prompt: 'x', width: 1000, height: 32, safety_tolerance: 6 })).toEqual([
      'body.width:multiple_of',
      'body.height:greater_than_equal',
      'body.safety_tolerance:less_than_equal',
    ]);
    expect(await problems('flux-2-max', { prompt: 'x', steps: 20, guidance: 3 })).toEqual(['body.steps:extra_forbidden', 'body.guidance:extra_forbidden']);
    expect(await problems('flux-2-flex', { prompt: 'x', steps: 51, guidance: 1 })).toEqual(['body.steps:less_than_equal', 'body.guidance:greater_than_equal']);
    expect(await problems('flux-2-pro', { prompt: 'x', input_image: 'data:image/png;base64,AAAA', input_image_9: 'AAAA' })).toEqual([
      'body.input_image:value_error',
      'body.input_image_9:extra_forbidden',
    ]);
    const res = await post('flux-2-pro', '{"prompt":').set('content-type', 'application/json').expect(422);
    expect(res.body.detail[0].type).toBe('json_invalid');
    expect((await request(app).get('/bfl/v1/get_result').set('x-key', 'k-123').expect(422)).body.detail[0].loc).toEqual(['query', 'id']);
  });

  it('runs a task Pending → Ready on the clock, with a cost, and answers Task not found for an unknown id', async () => {
    const sub = (await post('flux-2-pro', { prompt: 'ok', width: 1024, height: 768, input_image: 'https://img.example.com/a.png' }).expect(200)).body;
    expect(sub).toEqual({
      id: expect.stringMatching(/^task_/),
      polling_url: expect.stringMatching(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/bfl/v1/get_result\\?id=${sub.id}$`)),
      cost: 4.5,
      input_mp: 1,
      output_mp: 1,
    });
    const poll = async () => (await request(app).get(`/bfl/v1/get_result?id=${sub.id}`).set('x-key', 'k-123').expect(200)).body;
    expect(await poll()).toMatchObject({ id: sub.id, status: 'Pending', progress: 0, result: null });
    t += 60_000;
    const ready = await poll();
    expect(ready).toMatchObject({ status: 'Ready', progress: 1, result: { sample: expect.stringMatching(/^http:\/\/sim\.test:9090\/vendor-files\/\d+\//) } });
    const gone = (await request(app).get('/bfl/v1/get_result?id=nope').set('x-key', 'k-123').expect(200)).body;
    expect(gone).toEqual({ id: 'nope', status: 'Task not found', result: null, progress: null });
  });
});
