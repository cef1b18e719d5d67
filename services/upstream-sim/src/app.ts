import express, { type NextFunction, type Request, type Response } from 'express';
import { resolveModel, validateRequest } from '@gmg/contracts';
import { createLogger, type Logger } from '@gmg/logger';
import { avatarSubmitHandler } from './avatar/avatar-submit.handler';
import { artgenRouter } from './artgen/artgen.router';
import { SimKeys } from './sim-keys';
import { filesHandler } from './files.handler';
import { openAiSimRouter } from './vendors/openai/openai-sim.router';
import { expiringFilesHandler, vendorRequestLog, type VendorSimContext } from './vendors/vendor-sim-kit';
import { replicateSimRouter } from './vendors/replicate/replicate-sim.router';
import { falSimRouter } from './vendors/fal/fal-sim.router';
import { bflSimRouter } from './vendors/bfl/bfl-sim.router';
import { dashScopeSimRouter } from './vendors/dashscope/dashscope-sim.router';
import { klingSimRouter } from './vendors/kling/kling-sim.router';
import { runwaySimRouter } from './vendors/runway/runway-sim.router';
import { geminiSimRouter } from './vendors/gemini/gemini-sim.router';
import { arkSimRouter } from './vendors/ark/ark-sim.router';
import { mjProxySimRouter } from './vendors/mj-proxy/mj-proxy-sim.router';
import { ArtRenderer, artFilesHandler } from './artgen/artgen-render';
import { messagesSimRouter, type MessagesSimOptions } from './messages/messages-sim.router';
import { ImageRenderer } from './media/image-renderer';
import { VideoRenderer } from './media/video-renderer';
import { sendError } from './sim-errors';
import { SimTaskStore } from './sim-task.store';
import { submitHandler, type SimModels } from './submit.handler';
import { simStateAt, unifiedTaskAt } from './task-view';

/** The path prefixes of the vendor modes (each mounted below). */

const VENDOR_PREFIXES = ['/fal', '/replicate', '/openai', '/bfl', '/dashscope', '/kling', '/runway', '/gemini', '/ark', '/mj-proxy'];

export interface SimAppOptions {
  /** Multiplies every simulated duration. */
  timeScale: number;
  /** Base of result file links, no trailing slash. */
  publicUrl: string;
  /** When set, /v1 calls need `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** More keys /v1 accepts beside `apiKey` (POST /__sim/keys revokes or rate-limits any of them until healed). */
  extraApiKeys?: readonly string[];
  maxTasks?: number;
  logger?: Logger;
  now?: () => number;
  /** The wait of a synchronous answer (the art suite's describe); node's timer by default, tests inject one to see it. */
  sleep?: (ms: number) => Promise<void>;
  /** Defaults to the real model registry of @gmg/contracts. */
  models?: SimModels;
  /** Defaults to the ffmpeg binary of @ffmpeg-installer/ffmpeg. */
  ffmpegPath?: string;
  imageCacheBytes?: number;
  /** Every vendor mode's result links expire this long after they were made (SIM_VENDOR_LINK_TTL_MS; tests). */
  vendorLinkTtlMs?: number;
  /** The messages protocol endpoint (POST /v1/messages): fault injection and events for tests. */
  messages?: Omit<MessagesSimOptions, 'apiKey' | 'log'>;
}

/** The simulator's HTTP app (never listens; main.ts does). */
export function createSimApp(opts: SimAppOptions): express.Express {
  const log = opts.logger ?? createLogger({ service: 'upstream-sim', level: 'silent' });
  const now = opts.now ?? Date.now;
  const publicUrl = opts.publicUrl.replace(/\/+$/, '');
  const store = new SimTaskStore(opts.maxTasks);
  const models: SimModels = opts.models ?? { resolveModel, validateRequest };
  const images = new ImageRenderer(opts.imageCacheBytes);
  const videos = new VideoRenderer({ ffmpegPath: opts.ffmpegPath });

  const app = express();
  app.disable('x-powered-by');
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok', tasks: store.size, video: videos.available });
  });
  const keys = new SimKeys([...(opts.apiKey ? [opts.apiKey] : []), ...(opts.extraApiKeys ?? [])]);
  app.use('/__sim/keys', keys.router());
  app.use(artgenRouter({ timeScale: opts.timeScale, publicUrl, apiKey: opts.apiKey, keys, maxTasks: opts.maxTasks, now, sleep: opts.sleep, log, videos }));
  const files = filesHandler({ images, videos, log });
  app.get('/files/:name', files);
  // Vendor protocols (issue 34), each under its own prefix, strict as its vendor documents it.
  const vendor: VendorSimContext = { publicUrl, apiKey: opts.apiKey, timeScale: opts.timeScale, now, log, store, images, linkTtlMs: opts.vendorLinkTtlMs };
  const seen = vendorRequestLog();
  app.get('/__sim/vendor-requests', seen.list);
  app.use(VENDOR_PREFIXES, seen.record);
  // A vendor link may name an art suite file (mj-proxy's grids and tiles): rendered as the art suite's own are.
  const artFiles = artFilesHandler({ art: new ArtRenderer(), videos, log });
  const vendorFiles: express.RequestHandler = (req, res, next) => void artFiles(req, res, () => files(req, res, next));
  app.get('/vendor-files/:exp/:name', seen.recordStart, expiringFilesHandler(now, vendorFiles, store));
  app.use('/replicate', replicateSimRouter(vendor));
  app.use('/fal', falSimRouter(vendor));
  app.use('/openai', openAiSimRouter(vendor));
  app.use('/bfl', bflSimRouter(vendor));
  app.use('/dashscope', dashScopeSimRouter(vendor));
  app.use('/kling', klingSimRouter(vendor));
  app.use('/runway', runwaySimRouter(vendor));
  app.use('/gemini', geminiSimRouter(vendor));
  app.use('/ark', arkSimRouter(vendor));
  app.use('/mj-proxy', mjProxySimRouter(vendor));

  app.use('/v1/messages', messagesSimRouter({ ...opts.messages, apiKey: opts.apiKey, log }));
  const v1 = express.Router();
  if (keys.configured) v1.use(keys.bearer((res, status, type, message) => sendError(res, status, type, message)));
  v1.use(express.json({ limit: '30mb' }));
  const submit = submitHandler({ store, models, timeScale: opts.timeScale, now, log });
  v1.post('/images/generations', submit);
  v1.post('/videos/generations', submit);
  v1.post('/motion2/private-avatar', avatarSubmitHandler({ store, timeScale: opts.timeScale, now, log }));
  v1.get('/tasks/:id', (req, res) => {
    const task = store.get(String(req.params.id));
    if (!task) return sendError(res, 404, 'not_found_error', 'task not found');
    res.json({ code: 200, data: unifiedTaskAt(task, now(), publicUrl) });
  });
  // Cancel (the gateway protocol's optional stop): an open task fails with type `cancelled`; an ended one is 409.
  v1.post('/tasks/:id/cancel', (req, res) => {
    const task = store.get(String(req.params.id));
    if (!task) return sendError(res, 404, 'not_found_error', 'task not found');
    const at = now();
    const state = simStateAt(task, at);
    if (state.status === 'completed' || state.status === 'failed') {
      return sendError(res, 409, 'invalid_request_error', `task is already ${state.status}`);
    }
    task.cancelledAt = at;
    log.info({ taskId: task.id }, 'sim task cancelled');
    res.json({ code: 200, data: unifiedTaskAt(task, at, publicUrl) });
  });
  app.use('/v1', v1);

  app.use((_req: Request, res: Response) => sendError(res, 404, 'not_found_error', 'route not found'));
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const e = err as { type?: string; status?: number };
    if (e.type === 'entity.parse.failed') return sendError(res, 400, 'invalid_request_error', 'request body is not valid JSON');
    if (e.type === 'entity.too.large') return sendError(res, 413, 'invalid_request_error', 'request body is too large');
    log.error({ err }, 'sim request failed');
    sendError(res, 500, 'server_error', 'internal error');
  });
  return app;
}
