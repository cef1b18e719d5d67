import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { isArtgenFollowUp, parseArtgenCustomId, type ArtgenPathAction } from '@gmg/contracts';
import { planTask } from '../../artgen/artgen-plan';
import { describeText } from '../../artgen/artgen-describe';
import { artStateAt } from '../../artgen/artgen-view';
import { durationMs, parseMarkers } from '../../sim-scenario';
import { SimTaskStore } from '../../sim-task.store';
import { rateLimitedOnce, type VendorSimContext } from '../vendor-sim-kit';
import { newHash, newProxyTaskId, newSeed, proxyView, type MjSimTask } from './mj-proxy-sim.task';

/**
 * A midjourney-proxy (docs/upstreams/mj-proxy.md) as both public implementations answer, mounted under `/mj-proxy`:
 * - `POST {/mj | /mj-fast/mj | /mj-turbo/mj | /mj-relax/mj}/submit/{imagine,blend,describe,action,modal}` →
 *   SubmitResultVO `{code, description, result, properties}` (ReturnCode: 1 ok, 21 MODAL, 22 queued, 23 queue full,
 *   24 banned prompt, 3 not found under HTTP 404, 4 validation);
 * - `GET …/task/{id}/fetch` → the proxy's TaskInfo: NOT_START/SUBMITTED → IN_PROGRESS ("46%") → SUCCESS | FAILURE,
 *   MODAL after Vary (Region) until `/submit/modal`; buttons carry the simulator's own job hash (a UUID); image
 *   links expire as Discord's CDN links do.
 * Auth: `mj-api-secret: <key>` (or `Authorization: Bearer <key>`). Markers: `[sim:moderation]` → code 24,
 * `[sim:429once]` → the first submit of that prompt answers code 23 (queue full), `[sim:fail]` → FAILURE,
 * `[sim:gridonly]` → a grid without `imageUrls` (the Java proxy's shape). A request carrying the header
 * `x-sim-queue: full` always answers code 23 (a proxy whose queue stays full: failover tests).
 */
const PREFIXES = ['/mj', '/mj-fast/mj', '/mj-turbo/mj', '/mj-relax/mj'];
const CODE = { ok: 1, notFound: 3, validation: 4, existed: 21, queueFull: 23, banned: 24 } as const;
const DIMENSIONS = ['PORTRAIT', 'SQUARE', 'LANDSCAPE'];
const DATA_URI = /^data:image\/[a-z+.-]{1,20};base64,[A-Za-z0-9+/]+={0,2}$/;

type Body = Record<string, unknown>;
const answer = (res: Response, code: number, description: string, result: string | null = null, status = 200) =>
  res.status(status).json({ code, description, result, properties: {} });

class Refused extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly status = 200,
  ) {
    super(message);
  }
}
const invalid = (message: string) => new Refused(CODE.validation, message);
const missing = () => new Refused(CODE.notFound, '关联任务不存在或已失效', 404);

function auth(ctx: VendorSimContext) {
  return (req: Request, res: Response, next: NextFunction) => {
    const bearer = /^Bearer\s+(.+)$/i.exec(req.header('authorization') ?? '')?.[1];
    const key = req.header('mj-api-secret') ?? bearer;
    if (!key || (ctx.apiKey !== undefined && key !== ctx.apiKey)) return res.status(401).json({ error: 'Unauthorized', message: 'mj-api-secret is invalid' });
    next();
  };
}

export function mjProxySimRouter(ctx: VendorSimContext): Router {
  const store = new SimTaskStore<MjSimTask>();
  const r = express.Router();
  r.use(auth(ctx));
  r.use(express.json({ limit: '30mb' }));

  /** Code 23 / 24 before a task exists (the proxy checks the prompt and its queue at submit). */
  function gate(req: Request, prompt: unknown): void {
    if (req.header('x-sim-queue') === 'full') throw new Refused(CODE.queueFull, '队列已满，请稍后尝试');
    if (typeof prompt === 'string' && prompt.includes('[sim:moderation]')) throw new Refused(CODE.banned, '可能包含敏感词');
    if (rateLimitedOnce(prompt)) throw new Refused(CODE.queueFull, '队列已满，请稍后尝试');
  }

  function create(action: ArtgenPathAction, b: Body, parent: MjSimTask | undefined, extra: Partial<MjSimTask>): MjSimTask {
    const planned = planTask(action, b, parent ? { task: parent, status: artStateAt(parent, ctx.now()).status } : undefined);
    if (!planned.ok) throw invalid(planned.refusal.message);
    const plan = planned.plan;
    const now = ctx.now();
    const task: MjSimTask = {
      id: newProxyTaskId(now),
      action,
      prompt: plan.prompt,
      seed: plan.seed ?? newSeed(),
      output: plan.output,
      markers: plan.markers,
      submitTime: now,
      hash: newHash(),
      gridOnly: String(plan.prompt).includes('[sim:gridonly]'),
      botType: typeof b.botType === 'string' ? b.botType : 'MID_JOURNEY',
      ...(typeof b.state === 'string' ? { state: b.state } : {}),
      ...(plan.version !== undefined ? { version: plan.version } : {}),
      ...(plan.parentId ? { parentId: plan.parentId } : {}),
      ...extra,
    };
    if (plan.output.kind === 'text') task.prompt = describeText(plan.output.prompts);
    if (!plan.awaitsModal) {
      task.run = {
        startedAt: now,
        durationMs: durationMs(plan.timing.kind, plan.timing.estimatedSeconds, plan.markers, ctx.timeScale),
        outcome: plan.markers.outcome,
      };
    }
    store.add(task);
    return task;
  }

  const dataUris = (v: unknown, min: number, max: number, message: string): string[] => {
    if (!Array.isArray(v) || v.length < min || v.length > max) throw invalid(message);
    if (!v.every((x) => typeof x === 'string' && DATA_URI.test(x))) throw invalid('base64格式错误');
    return v as string[];
  };

  const handlers: Record<string, (req: Request, b: Body) => { code: number; description: string; id: string }> = {
    imagine(req, b) {
      if (typeof b.prompt !== 'string' || !b.prompt.trim()) throw invalid('prompt不能为空');
      if (b.base64Array !== undefined && b.base64Array !== null) dataUris(b.base64Array, 0, 5, 'base64格式错误');
      gate(req, b.prompt);
      return {
        code: CODE.ok,
        description: '提交成功',
        id: create('imagine', { prompt: b.prompt.trim(), botType: b.botType, state: b.state }, undefined, {}).id,
      };
    },
    blend(req, b) {
      const images = dataUris(b.base64Array, 2, 5, 'base64List参数错误');
      const dimensions = b.dimensions ?? 'SQUARE';
      if (typeof dimensions !== 'string' || !DIMENSIONS.includes(dimensions)) throw invalid('dimensions参数错误');
      gate(req, undefined);
      return {
        code: CODE.ok,
        description: '提交成功',
        id: create('blend', { image_urls: images, dimensions, botType: b.botType, state: b.state }, undefined, {}).id,
      };
    },
    describe(req, b) {
      if (typeof b.base64 !== 'string' || !b.base64) throw invalid('base64或link不能为空');
      if (!DATA_URI.test(b.base64)) throw invalid('base64格式错误');
      gate(req, undefined);
      return {
        code: CODE.ok,
        description: '提交成功',
        id: create('describe', { image_urls: [b.base64], botType: b.botType, state: b.state }, undefined, {}).id,
      };
    },
    action(req, b) {
      if (typeof b.taskId !== 'string' || !b.taskId || typeof b.customId !== 'string' || !b.customId) throw invalid('参数错误');
      const parent = store.get(b.taskId);
      if (!parent) throw missing();
      if (artStateAt(parent, ctx.now()).status !== 'SUCCESS') throw invalid('关联任务状态错误');
      // the proxy presses a button its task showed: one of another task (its hash differs) is not one of them
      const shown = (proxyView(ctx, parent).buttons as Array<{ customId: string }>).some((x) => x.customId === b.customId);
      const parsed = parseArtgenCustomId(b.customId);
      if (!shown || !parsed || !isArtgenFollowUp(parsed.action)) throw invalid('未知的 Action 类型');
      gate(req, parent.prompt);
      const { action, hash: _hash, ...fields } = parsed;
      const task = create(action, { ...fields, task_id: parent.id, state: b.state }, parent, { botType: parent.botType, gridOnly: parent.gridOnly });
      if (!task.run) return { code: CODE.existed, description: 'Waiting for window confirm', id: task.id };
      return { code: CODE.ok, description: '提交成功', id: task.id };
    },
    modal(req, b) {
      if (typeof b.taskId !== 'string' || !b.taskId) throw invalid('参数错误');
      const task = store.get(b.taskId);
      if (!task) throw missing();
      if (artStateAt(task, ctx.now()).status !== 'MODAL') throw invalid('关联任务状态错误');
      if (typeof b.prompt !== 'string' || !b.prompt.trim()) throw invalid('prompt不能为空');
      if (task.action === 'inpaint' && (typeof b.maskBase64 !== 'string' || !DATA_URI.test(b.maskBase64))) throw invalid('base64格式错误');
      gate(req, b.prompt);
      const markers = parseMarkers(b.prompt);
      task.prompt = b.prompt;
      task.markers = markers;
      task.run = { startedAt: ctx.now(), durationMs: durationMs('images', 60, markers, ctx.timeScale), outcome: markers.outcome };
      return { code: CODE.ok, description: '提交成功', id: task.id };
    },
  };

  for (const prefix of PREFIXES) {
    r.post(`${prefix}/submit/:kind`, (req, res) => {
      const handler = handlers[String(req.params.kind)];
      if (!handler) return res.status(404).json({ code: CODE.notFound, description: 'Not Found', result: null, properties: {} });
      const b = (typeof req.body === 'object' && req.body !== null && !Array.isArray(req.body) ? req.body : {}) as Body;
      try {
        const out = handler(req, b);
        answer(res, out.code, out.description, out.id);
      } catch (e) {
        if (!(e instanceof Refused)) throw e;
        answer(res, e.code, e.message, null, e.status);
      }
    });
    r.get(`${prefix}/task/:id/fetch`, (req, res) => {
      const task = store.get(String(req.params.id));
      if (!task) return answer(res, CODE.notFound, '关联任务不存在或已失效', null, 404);
      res.json(proxyView(ctx, task));
    });
  }
  r.use((_req: Request, res: Response) => res.status(404).json({ code: CODE.notFound, description: 'Not Found', result: null, properties: {} }));
  r.use((err: { type?: string }, _req: Request, res: Response, next: NextFunction) => {
    if (err.type === 'entity.parse.failed') return answer(res, CODE.validation, '请求体不是有效的 JSON', null, 400);
    if (err.type === 'entity.too.large') return answer(res, CODE.validation, '请求体过大', null, 413);
    next(err);
  });
  return r;
}
