import { LRUCache } from 'lru-cache';
import type { ArtgenPathAction } from '@gmg/contracts';
import type { SimMarkers, SimOutcome } from '../sim-scenario';
import { newTaskId } from '../sim-task.store';
import type { Size } from './artgen-geometry';

/** What a finished task shows. Only sizes and seeds: files are rendered from their names when first fetched. */
export type ArtOutput =
  | { kind: 'grid'; tile: Size }
  | { kind: 'single'; size: Size }
  | { kind: 'videos'; count: number; still: Size }
  | { kind: 'text'; prompts: string[] };

/** The timing of a task's run (see sim-scenario stateAt): state is a pure function of it and the clock. */
export interface ArtRun {
  startedAt: number;
  durationMs: number;
  outcome: SimOutcome;
}

export interface ArtTask {
  id: string;
  /** The path action (`high-variation`); views show it upper-case (`HIGH_VARIATION`). */
  action: ArtgenPathAction;
  prompt: string;
  /** Images are rendered from seeds: tile i of a grid is `<seed>.<i>`; a single image is `<seed>`. */
  seed: string;
  output: ArtOutput;
  /** Follow-ups without a prompt of their own inherit these. */
  markers: SimMarkers;
  submitTime: number;
  /** Absent while an inpaint task waits in MODAL for its `/modal`. */
  run?: ArtRun;
  /** Normalized version (v7, v8.2, altstyle6 …), inherited by follow-ups; the buttons read it (pan arrows). */
  version?: string;
  parentId?: string;
}

/** A submit answer as first sent, replayed verbatim for the same Idempotency-Key. */
export interface ArtAnswer {
  status: number;
  body: unknown;
}

/** Ids look like the gateway's own (`task_…`): a chained gateway's upstream is another gateway. */
export const newArtTaskId = newTaskId;

/** Seed of an art task id: its random part (file names carry it, so links outlive the task in the store). */
export const seedOf = (id: string): string => id.replace(/^task_/, '');

/**
 * Art tasks and their idempotency answers in memory, bounded like SimTaskStore (the least recently used entries are
 * forgotten; a forgotten task answers 404 like a purged one).
 */
export class ArtgenStore {
  private readonly tasks: LRUCache<string, ArtTask>;
  private readonly answers: LRUCache<string, ArtAnswer>;
  private readonly failedOnce: LRUCache<string, true>;

  constructor(maxTasks = 50_000) {
    this.tasks = new LRUCache({ max: maxTasks });
    this.answers = new LRUCache({ max: maxTasks });
    this.failedOnce = new LRUCache({ max: maxTasks });
  }

  get(id: string): ArtTask | undefined {
    return this.tasks.get(id);
  }

  add(task: ArtTask): void {
    this.tasks.set(task.id, task);
  }

  answerFor(idempotencyKey: string): ArtAnswer | undefined {
    return this.answers.get(idempotencyKey);
  }

  remember(idempotencyKey: string | undefined, answer: ArtAnswer): void {
    if (idempotencyKey) this.answers.set(idempotencyKey, answer);
  }

  /** `[sim:error503once]`: true the first time a key is seen (that submit fails), false afterwards. */
  firstFailure(key: string): boolean {
    if (this.failedOnce.has(key)) return false;
    this.failedOnce.set(key, true);
    return true;
  }

  get size(): number {
    return this.tasks.size;
  }
}
