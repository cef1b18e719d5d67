import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { vendorAuth, type VendorSimContext } from '../vendor-sim-kit';
import { chatHandler } from './openai-sim.chat';
import { imagesHandler } from './openai-sim.images';
import { OpenAiRefusal, sendOpenAiError } from './openai-sim.shared';
import { videosRoutes } from './openai-sim.videos';

type Handler = (req: Request, res: Response) => void | Promise<void>;

/** A refusal thrown by a validator is answered in OpenAI's error shape; anything else is the router's error handler's. */
const answer =
  (h: Handler) =>
  async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    try {
      await h(req, res);
    } catch (e) {
      if (e instanceof OpenAiRefusal) return sendOpenAiError(res, e.status, e.message, e.param, e.code, e.type);
      next(e);
    }
  };

const bearerKey = (req: Request): string | undefined => /^Bearer (\S+)$/.exec(req.header('authorization') ?? '')?.[1];

/**
 * OpenAI's media API under `/openai` (issue 34) and its chat completions (issue 36): `Authorization: Bearer <key>` on every call (401 `invalid_api_key`
 * otherwise, the key never echoed), images by the synchronous generations / edits calls, video by the `/v1/videos`
 * job. JSON and multipart/form-data bodies, as OpenAI takes both.
 */
export function openAiSimRouter(ctx: VendorSimContext): Router {
  const r = express.Router();
  r.use(
    vendorAuth(ctx, bearerKey, (res) =>
      sendOpenAiError(
        res,
        401,
        'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.',
        null,
        'invalid_api_key',
      ),
    ),
  );
  r.use(express.json({ limit: '60mb' }));
  r.use(express.raw({ type: 'multipart/form-data', limit: '60mb' }));
  r.post('/v1/chat/completions', answer(chatHandler(ctx)));
  r.post('/v1/images/generations', answer(imagesHandler(ctx, 'generations')));
  r.post('/v1/images/edits', answer(imagesHandler(ctx, 'edits')));
  const videos = videosRoutes(ctx);
  r.post('/v1/videos', answer(videos.create));
  r.get('/v1/videos/:id', answer(videos.get));
  r.get('/v1/videos/:id/content', answer(videos.content));
  r.delete('/v1/videos/:id', answer(videos.remove));
  r.use((req: Request, res: Response) => sendOpenAiError(res, 404, `Invalid URL (${req.method} ${req.path})`, null, null));
  r.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const e = err as { type?: string };
    if (e.type === 'entity.parse.failed') return sendOpenAiError(res, 400, 'We could not parse the JSON body of your request.', null, null);
    if (e.type === 'entity.too.large') return sendOpenAiError(res, 413, 'The request body is too large.', null, null);
    ctx.log.error({ err }, 'openai sim request failed');
    sendOpenAiError(res, 500, 'The server had an error while processing your request.', null, null, 'server_error');
  });
  return r;
}
