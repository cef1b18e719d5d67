import type { Pool } from './queues';
import type { ArtgenNativeTask } from './artgen-native';

export type TaskStatus = 'pending' | 'processing' | 'completed' | 'failed';
export const isTerminal = (s: TaskStatus): boolean => s === 'completed' || s === 'failed';

export interface ImageResult {
  url: string;
  width?: number;
  height?: number;
  format?: string;
}
export interface VideoResult {
  /** The file is the first element (spec 2.2). */
  url: string[];
  expires_at: number;
  duration?: number;
}
export interface AssetResult {
  asset_id: string;
  asset_url: string;
  status: string;
  /** Why the asset was not approved (status `Rejected`). Optional: added with per-asset review. */
  reason?: string;
}
export interface TaskResult {
  images?: ImageResult[];
  videos?: VideoResult[];
  assets?: AssetResult[];
  usable_assets?: AssetResult[];
  /** Art suite and describe: free text. */
  text?: string;
}
export interface TaskError {
  code: 'task_failed';
  message: string;
  type?: string;
}

/** The unified task of spec 2.2 (the `data` of `GET /v1/tasks/<id>`). */
export interface UnifiedTask {
  id: string;
  object?: string;
  model: string;
  status: TaskStatus;
  progress: number;
  cost: number;
  created: number;
  completed?: number;
  estimated_time?: number;
  actual_time?: number;
  result?: TaskResult;
  error?: TaskError;
}

/** What the Redis task view stores: the public shape plus the owner, so a foreign task answers 404. */
export interface TaskView {
  accountId: string;
  pool: Pool;
  task: UnifiedTask;
  /** Art suite tasks: the native view (spec 2.3) built from the same row. Optional, additive. */
  artgen?: ArtgenNativeTask;
}

/** Why a task failed, as stored on the row (message goes to the client, type is optional). */
export const TASK_TIMEOUT_MESSAGE = 'Task timeout';
export const NO_UPSTREAM_MESSAGE = 'No available upstream';
export const MODERATION_MESSAGE = 'Banned prompt detected';
/** A task its owner cancelled (POST /v1/tasks/<id>/cancel): failed with type `cancelled`, the hold released. */
export const CANCELLED_MESSAGE = 'Task cancelled';

/** Failure `type`s the task worker writes on a task (the message is what the client reads). */
export const TASK_FAILURE_TYPES = Object.freeze({
  timeout: 'timeout',
  moderation: 'moderation',
  noUpstream: 'no_upstream',
  upstream: 'upstream_error',
  /** Written by the cancel route, not by a worker: the owner ended the task. */
  cancelled: 'cancelled',
} as const);
