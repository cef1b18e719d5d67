import { LRUCache } from 'lru-cache';
import type { ArtgenPathAction } from '@gmg/contracts';
import type { SimMarkers, SimOutcome } from '../sim-scenario';
import { SimTaskStore, newTaskId } from '../sim-task.store';
import type { Size } from './artgen-geometry';

/** What a finished task shows. Only sizes and seeds: files are rendered from their names when first fetched. */
export type ArtOutput =
  { kind: 'grid'; tile: Size } | { kind: 'single'; size: Size } | { kind: 'videos'; count: number; still: Size } | { kind: 'text'; prompts: string[] };

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
 * Art tasks in the sim's bounded store, plus the first answer of each Idempotency-Key, replayed verbatim (the least
 * recently used entries are forgotten; a forgotten task answers 404 like a purged one).
 */
export class ArtgenStore extends SimTaskStore<ArtTask> {
  private readonly answers: LRUCache<string, ArtAnswer>;

  constructor(maxTasks = 50_000) {
    super(maxTasks);
    this.answers = new LRUCache({ max: maxTasks });
  }

  answerFor(idempotencyKey: string): ArtAnswer | undefined {
    return this.answers.get(idempotencyKey);
  }

  remember(idempotencyKey: string | undefined, answer: ArtAnswer): void {
    if (idempotencyKey) this.answers.set(idempotencyKey, answer);
  }
}
