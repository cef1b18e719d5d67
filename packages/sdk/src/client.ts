import { ARTGEN_PATHS, type ArtgenAction, type ArtgenRequests, type ImageRequest, type VideoRequest } from './generated/models.js';
import { GatewayError } from './errors.js';
import { Transport, type RequestOptions, type TransportOptions } from './http.js';
import type { ArtgenTask, AvatarSubmission, ChatCompletion, ChatCompletionRequest, MessagesRequest, ModelInfo, Submitted, Task, Upload } from './types.js';
import { waitForTask, type WaitOptions } from './wait.js';

export type GatewayClientOptions = TransportOptions;

export type MessagesOptions = RequestOptions & { version?: string };

/** The messages protocol's answer as the upstream sent it (not wrapped). */
export type MessagesResponse = Record<string, unknown>;

export interface MessagesApi {
  /** `stream: true`: the raw Response; its `body` is the server-sent event stream. */
  create(body: MessagesRequest & { stream: true }, opts?: MessagesOptions): Promise<Response>;
  create(body: MessagesRequest & { stream?: false }, opts?: MessagesOptions): Promise<MessagesResponse>;
}

export interface ChatCompletionsApi {
  /** `stream: true`: the raw Response; its `body` is the `chat.completion.chunk` event stream, ending with `data: [DONE]`. */
  create(body: ChatCompletionRequest & { stream: true }, opts?: RequestOptions): Promise<Response>;
  create(body: ChatCompletionRequest & { stream?: false }, opts?: RequestOptions): Promise<ChatCompletion>;
}

/** Reads the task id out of any acknowledgement shape: A `data[0].task_id`, B/C `data.id`, art suite `data.task_id`. */
export function taskIdOf(ack: unknown): string | undefined {
  const data = (ack as { data?: unknown } | undefined)?.data;
  const first = Array.isArray(data) ? (data[0] as Record<string, unknown> | undefined) : (data as Record<string, unknown> | undefined);
  const id = first?.task_id ?? first?.id;
  return typeof id === 'string' ? id : undefined;
}

/** An image to upload: bytes (with a content type for the multipart part) or a Base64 / data-URI string. */
export type UploadInput = Blob | Uint8Array | ArrayBuffer | string;

/** An art-suite follow-up by button: the `customId` from a task's `buttons[]` (POST …/action). */
export interface ArtgenButtonRequest {
  task_id: string;
  customId: string;
  prompt?: string;
  speed?: 'relax' | 'fast' | 'turbo';
  mask_url?: string;
  metadata?: Record<string, unknown>;
}

/**
 * The gateway client. One method per endpoint family; submissions carry an Idempotency-Key (reused by retries), 429
 * and 503 are retried honouring `Retry-After`, and every error answer is a typed GatewayError subclass.
 *
 * ```ts
 * const gmg = new GatewayClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: process.env.GMG_API_KEY! });
 * const { taskId } = await gmg.images.generate({ model: 'lumen-2-pro', prompt: 'a lighthouse at dusk' });
 * const task = await gmg.tasks.wait(taskId);
 * ```
 */
export class GatewayClient {
  private readonly http: Transport;

  constructor(options: GatewayClientOptions) {
    this.http = new Transport(options);
  }

  private async submit(path: string, body: unknown, opts: RequestOptions = {}): Promise<Submitted> {
    const res = await this.http.send({ method: 'POST', path, body, submit: true, ...opts });
    const ack = (await res.json()) as unknown;
    const taskId = taskIdOf(ack);
    if (!taskId) throw new GatewayError({ status: res.status, type: 'server_error', message: `POST ${path}: the acknowledgement names no task id`, body: ack });
    return { taskId, httpStatus: res.status, ack };
  }

  /** `POST /v1/images/generations`: the body is typed per model (`model` picks the interface). */
  readonly images = {
    generate: (body: ImageRequest, opts?: RequestOptions): Promise<Submitted> => this.submit('/v1/images/generations', body, opts),
  };

  /** `POST /v1/videos/generations`: the body is typed per model. */
  readonly videos = {
    generate: (body: VideoRequest, opts?: RequestOptions): Promise<Submitted> => this.submit('/v1/videos/generations', body, opts),
  };

  /** The art suite (`/v1/artgen/generations/*`, model `artgen` implied): one method per action, plus buttons and the native task. */
  readonly artgen = {
    submit: <A extends ArtgenAction>(action: A, body: ArtgenRequests[A], opts?: RequestOptions): Promise<Submitted> =>
      this.submit(ARTGEN_PATHS[action], body, opts),
    imagine: (body: ArtgenRequests['imagine'], opts?: RequestOptions) => this.artgen.submit('imagine', body, opts),
    blend: (body: ArtgenRequests['blend'], opts?: RequestOptions) => this.artgen.submit('blend', body, opts),
    /** Synchronous on the server: the acknowledgement usually carries the text already (`ack.data.prompt`). */
    describe: (body: ArtgenRequests['describe'], opts?: RequestOptions) => this.artgen.submit('describe', body, opts),
    edits: (body: ArtgenRequests['edits'], opts?: RequestOptions) => this.artgen.submit('edits', body, opts),
    upscale: (body: ArtgenRequests['upscale'], opts?: RequestOptions) => this.artgen.submit('upscale', body, opts),
    variation: (body: ArtgenRequests['variation'], opts?: RequestOptions) => this.artgen.submit('variation', body, opts),
    highVariation: (body: ArtgenRequests['high-variation'], opts?: RequestOptions) => this.artgen.submit('high-variation', body, opts),
    lowVariation: (body: ArtgenRequests['low-variation'], opts?: RequestOptions) => this.artgen.submit('low-variation', body, opts),
    reroll: (body: ArtgenRequests['reroll'], opts?: RequestOptions) => this.artgen.submit('reroll', body, opts),
    zoom: (body: ArtgenRequests['zoom'], opts?: RequestOptions) => this.artgen.submit('zoom', body, opts),
    pan: (body: ArtgenRequests['pan'], opts?: RequestOptions) => this.artgen.submit('pan', body, opts),
    inpaint: (body: ArtgenRequests['inpaint'], opts?: RequestOptions) => this.artgen.submit('inpaint', body, opts),
    modal: (body: ArtgenRequests['modal'], opts?: RequestOptions) => this.artgen.submit('modal', body, opts),
    video: (body: ArtgenRequests['video'], opts?: RequestOptions) => this.artgen.submit('video', body, opts),
    remixStrong: (body: ArtgenRequests['remix-strong'], opts?: RequestOptions) => this.artgen.submit('remix-strong', body, opts),
    remixSubtle: (body: ArtgenRequests['remix-subtle'], opts?: RequestOptions) => this.artgen.submit('remix-subtle', body, opts),
    /** A button of a finished task (`buttons[].customId`). */
    action: (body: ArtgenButtonRequest, opts?: RequestOptions) => this.submit('/v1/artgen/generations/action', body, opts),
    /** The native task (`GET /v1/artgen/{id}`), with its buttons. */
    get: (taskId: string, opts?: Pick<RequestOptions, 'signal'>): Promise<ArtgenTask> =>
      this.http.json<ArtgenTask>({ method: 'GET', path: `/v1/artgen/${encodeURIComponent(taskId)}`, signal: opts?.signal }),
  };

  /** `POST /v1/motion2/private-avatar`: a batch of avatar assets for review (acknowledgement shape C). */
  readonly avatars = {
    submit: (body: AvatarSubmission, opts?: RequestOptions): Promise<Submitted> => this.submit('/v1/motion2/private-avatar', body, opts),
  };

  /** Unified tasks (`/v1/tasks/{id}`). */
  readonly tasks = {
    get: async (taskId: string, opts?: Pick<RequestOptions, 'signal'>): Promise<Task> =>
      (await this.http.json<{ data: Task }>({ method: 'GET', path: `/v1/tasks/${encodeURIComponent(taskId)}`, signal: opts?.signal })).data,
    /** Polls until the task is terminal (see waitForTask). */
    wait: (taskId: string, opts?: WaitOptions): Promise<Task> => this.waitForTask(taskId, opts),
    /** `POST /v1/tasks/{id}/cancel`: ends a task that is not yet terminal as `failed` (`cancelled`), releasing its hold. */
    cancel: async (taskId: string, opts?: Pick<RequestOptions, 'signal'>): Promise<Task> =>
      (await this.http.json<{ data: Task }>({ method: 'POST', path: `/v1/tasks/${encodeURIComponent(taskId)}/cancel`, signal: opts?.signal })).data,
  };

  /**
   * Polls `GET /v1/tasks/{id}` until `completed` (resolves with the task) or `failed` (rejects with TaskFailedError),
   * pausing according to the task's `estimated_time`; `timeoutMs` bounds the wait, `signal` cancels it.
   */
  waitForTask(taskId: string, opts?: WaitOptions): Promise<Task> {
    return waitForTask((id, signal) => this.tasks.get(id, { signal }), taskId, opts);
  }

  /** The catalog (`GET /v1/models`); `expand: 'parameters'` adds each model's JSON Schema. */
  readonly models = {
    list: async (query: { expand?: 'category' | 'parameters'; category?: string } = {}, opts?: Pick<RequestOptions, 'signal'>): Promise<ModelInfo[]> =>
      (await this.http.json<{ data: ModelInfo[] }>({ method: 'GET', path: '/v1/models', query, signal: opts?.signal })).data,
    /** One model's contract (`GET /v1/model-schema?model=`), with idempotency and response-contract blocks. */
    schema: (model: string, opts?: Pick<RequestOptions, 'signal'>): Promise<ModelInfo & Record<string, unknown>> =>
      this.http.json({ method: 'GET', path: '/v1/model-schema', query: { model }, signal: opts?.signal }),
  };

  /** `POST /v1/uploads/images`: answers a `url` usable in `image_urls`. */
  readonly uploads = {
    image: async (image: UploadInput, opts: RequestOptions & { filename?: string; contentType?: string } = {}): Promise<Upload> => {
      const { filename, contentType, ...req } = opts;
      let body: unknown;
      if (typeof image === 'string') body = { image };
      else {
        const blob = image instanceof Blob ? image : new Blob([new Uint8Array(image)], { type: contentType ?? 'application/octet-stream' });
        const form = new FormData();
        form.append('file', blob, filename ?? 'image');
        body = form;
      }
      // an upload creates no task and costs nothing: a retry at worst leaves a second link
      return (await this.http.json<{ data: Upload }>({ method: 'POST', path: '/v1/uploads/images', body, ...req })).data;
    },
  };

  /**
   * `POST /v1/messages`, a thin pass-through of the messages protocol. Without `stream` it answers the parsed JSON;
   * with `stream: true` it answers the raw Response, whose `body` is the server-sent event stream.
   */
  readonly messages: MessagesApi = {
    create: (async (body: MessagesRequest, opts: MessagesOptions = {}): Promise<unknown> => {
      const { version, ...req } = opts;
      const headers = { 'msgproto-version': version ?? '2023-06-01', ...req.headers };
      const res = await this.http.send({ method: 'POST', path: '/v1/messages', body, ...req, headers, idempotencyKey: false });
      return body.stream ? res : ((await res.json()) as unknown);
    }) as MessagesApi['create'],
  };

  /**
   * `POST /v1/chat/completions` (docs/chat.md): the chat-completions protocol over the same chat models and money.
   * Without `stream` it answers the parsed completion; with `stream: true` the raw Response (its `body` is the
   * event stream). Refusals (400 naming the parameter, …) come back as the typed errors, `param` included.
   */
  readonly chat: { completions: ChatCompletionsApi } = {
    completions: {
      create: (async (body: ChatCompletionRequest, opts: RequestOptions = {}): Promise<unknown> => {
        const res = await this.http.send({ method: 'POST', path: '/v1/chat/completions', body, ...opts, idempotencyKey: false });
        return body.stream ? res : ((await res.json()) as unknown);
      }) as ChatCompletionsApi['create'],
    },
  };
}
