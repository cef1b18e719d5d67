/** Response shapes of the gateway (spec sections 2.1-2.4; docs/artgen.md, docs/uploads.md). */

export type TaskStatus = 'pending' | 'processing' | 'completed' | 'failed';

/** The unified task of `GET /v1/tasks/{id}` (`data`). */
export interface Task {
  id: string;
  object?: string;
  model?: string;
  status: TaskStatus;
  /** 0..100 */
  progress: number;
  /** Charge in currency units; 0 once failed (refunded). */
  cost: number;
  /** Unix seconds. */
  created: number;
  completed?: number;
  /** Typical seconds to finish for this model: the SDK's polling follows it. */
  estimated_time?: number;
  actual_time?: number;
  result?: {
    images?: Array<{ url: string; [k: string]: unknown }>;
    /** `url` is an array; the file is its first element. */
    videos?: Array<{ url: string[]; expires_at?: number; [k: string]: unknown }>;
    assets?: Array<{ asset_id: string; asset_url: string; status: string }>;
    usable_assets?: Array<{ asset_id: string; asset_url: string; status: string }>;
    text?: string;
    [k: string]: unknown;
  };
  error?: { code: string; message: string; type?: string };
}

/** What a submission answers, whatever its acknowledgement shape (A, B, C or the art suite's). */
export interface Submitted {
  /** The task to poll. */
  taskId: string;
  /** HTTP status of the acknowledgement (200, or 202 for shape B). */
  httpStatus: number;
  /** The acknowledgement as the gateway sent it. */
  ack: unknown;
}

/** Art-suite native task (`GET /v1/artgen/{id}`). */
export interface ArtgenTask {
  id: string;
  action: string;
  status: 'SUBMITTED' | 'IN_PROGRESS' | 'SUCCESS' | 'FAILURE' | 'MODAL';
  /** e.g. `46%` */
  progress: string;
  prompt?: string;
  description?: string;
  fail_reason?: string;
  grid_image_url?: string;
  image_urls: string[];
  video_urls?: string[];
  width?: number;
  height?: number;
  buttons: Array<{ customId: string; label: string }>;
  submit_time: number;
  start_time?: number;
  finish_time?: number;
}

/** One item of `GET /v1/models` (spec 2.4). */
export interface ModelInfo {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  supported_endpoint_types: string[];
  category?: 'chat' | 'image' | 'video' | 'audio' | 'unknown';
  capability_tags?: string[];
  parameters?: {
    operation: string;
    method: 'POST';
    endpoint: string;
    schema_version: string;
    source: string;
    input_schema: Record<string, unknown>;
    actions?: Record<string, { method: 'POST'; endpoint: string; input_schema: Record<string, unknown> }>;
  };
}

/** `POST /v1/uploads/images` (`data`). */
export interface Upload {
  url: string;
  id: string;
  mime: string;
  bytes: number;
  width: number;
  height: number;
  expires_at: number;
}

/** `POST /v1/motion2/private-avatar` body (spec 4.8). */
export interface AvatarSubmission {
  group?: { name: string; description?: string };
  group_id?: string;
  project_name?: string;
  asset_type?: 'Image' | 'Video' | 'Audio';
  /** 1..20 assets */
  assets?: Array<{ url: string; name: string }>;
  /** Single-asset shorthand (not together with `assets`). */
  url?: string;
  name?: string;
}

/**
 * `POST /v1/chat/completions` body: the chat-completions protocol, translated by the gateway to the messages
 * channels (docs/chat.md has the mapping and what is refused). Only the common fields are typed.
 */
export interface ChatCompletionRequest {
  model: string;
  messages: Array<{
    role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
    content?: string | Array<Record<string, unknown>> | null;
    tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
    tool_call_id?: string;
  }>;
  max_tokens?: number;
  max_completion_tokens?: number;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  [k: string]: unknown;
}

/** `POST /v1/chat/completions` answer (not streamed). */
export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: {
      role: 'assistant';
      content: string | null;
      refusal: null;
      tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
    };
    logprobs: null;
    finish_reason: 'stop' | 'length' | 'tool_calls' | 'content_filter';
  }>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details?: { cached_tokens: number } };
}

/** `POST /v1/messages` body: the messages protocol (only what the gateway checks is typed; the rest passes through). */
export interface MessagesRequest {
  model: string;
  max_tokens: number;
  messages: Array<{ role: 'user' | 'assistant'; content: string | Array<Record<string, unknown>> }>;
  stream?: boolean;
  [k: string]: unknown;
}
