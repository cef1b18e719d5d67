import type { DataSource } from 'typeorm';
import { ChannelKeyRepository, ChannelRepository } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import { trialEachKey, type TrialDeps, type TrialStatus } from '@gmg/upstream';
import { channelKeyView, keyInputs, type ChannelKeyView, type KeyBody } from './management.service';
import { addChannelKeysSchema, isUuid, testChannelSchema, updateChannelKeySchema, validate } from './management.schemas';

/** One key's answer in a channel test (never the secret). */
export interface KeyTestView {
  /** Null: the channel's own one key (`api_key`). */
  key_id: string | null;
  hint: string | null;
  status: TrialStatus;
  latency_ms: number;
  /** The vendor's error message (or the network error); null when it accepted the call. */
  error: string | null;
}
export interface ChannelTestView {
  channel_id: string;
  protocol: string;
  /** The model the calls named (the channel's first listed model, or the body's `model`). */
  model: string | null;
  keys: KeyTestView[];
}

/** One channel's keys, one at a time (issue 37 item 1): the others are never touched. Answers never hold a secret. */
export class ChannelKeysService {
  private readonly keys: ChannelKeyRepository;
  private readonly channels: ChannelRepository;

  constructor(
    ds: DataSource,
    private readonly trial?: TrialDeps,
  ) {
    this.keys = new ChannelKeyRepository(ds);
    this.channels = new ChannelRepository(ds);
  }

  private async requireChannel(id: string): Promise<void> {
    if (!isUuid(id) || !(await this.channels.get(id))) throw new DomainError('not_found', `Channel ${id} not found`);
  }

  /**
   * POST /api/channels/{id}/test: one real, minimal call per key (trialCall: a one-token message on chat channels,
   * the poll of an unknown task id on task protocols), whatever the keys' health; it changes no health record.
   */
  async test(channelId: string, body: unknown): Promise<ChannelTestView> {
    const b = validate<{ model?: string }>(testChannelSchema, body);
    const ch = isUuid(channelId) ? await this.channels.getWithSecret(channelId) : null;
    if (!ch) throw new DomainError('not_found', `Channel ${channelId} not found`);
    if (!this.trial) throw new DomainError('service_unavailable', 'The channel test is not available on this replica');
    const model = b.model ?? ch.models?.[0];
    const keys = await trialEachKey(this.trial, ch, model);
    return {
      channel_id: ch.id,
      protocol: ch.protocol,
      model: model ?? null,
      keys: keys.map((k) => ({ key_id: k.keyId, hint: k.hint, status: k.status, latency_ms: k.latencyMs, error: k.message ?? null })),
    };
  }

  private notFound(channelId: string, keyId: string): DomainError {
    return new DomainError('not_found', `Key ${keyId} not found on channel ${channelId}`);
  }

  async list(channelId: string): Promise<ChannelKeyView[]> {
    await this.requireChannel(channelId);
    return (await this.keys.list(channelId)).map(channelKeyView);
  }

  async add(channelId: string, body: unknown): Promise<ChannelKeyView[]> {
    const b = validate<{ key?: string; weight?: number; keys?: KeyBody[] }>(addChannelKeysSchema, body);
    await this.requireChannel(channelId);
    const input = b.keys ? keyInputs(b.keys) : [{ secret: b.key!, weight: b.weight }];
    return (await this.keys.add(channelId, input)).map(channelKeyView);
  }

  async update(channelId: string, keyId: string, body: unknown): Promise<ChannelKeyView> {
    const b = validate<{ status?: 'active' | 'disabled'; reason?: string; weight?: number }>(updateChannelKeySchema, body);
    if (!isUuid(channelId) || !isUuid(keyId)) throw this.notFound(channelId, keyId);
    const k = await this.keys.update(channelId, keyId, b);
    if (!k) throw this.notFound(channelId, keyId);
    return channelKeyView(k);
  }

  async remove(channelId: string, keyId: string): Promise<void> {
    if (!isUuid(channelId) || !isUuid(keyId) || !(await this.keys.remove(channelId, keyId))) throw this.notFound(channelId, keyId);
  }
}
