import Joi from 'joi';
import type { DataSource } from 'typeorm';
import { fromMinor } from '@gmg/contracts';
import { NO_CHANNEL, USAGE_DIMENSIONS, USAGE_HOURLY_MAX_DAYS, UsageRepository, usageRange, type UsageDimension, type UsageGroup } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import { validate } from './management.schemas';

/** The longest range one usage query covers (days); grouping by hour: USAGE_HOURLY_MAX_DAYS. */
const USAGE_MAX_DAYS = 93;
const DAY_S = 86_400;

const uuid = () => Joi.string().guid({ version: ['uuidv1', 'uuidv2', 'uuidv3', 'uuidv4', 'uuidv5', 'uuidv7', 'uuidv8'] });
const usageFields = {
  /**
   * Unix seconds; `from` inclusive, rounded down to the hour, `to` exclusive, rounded up (default now); a range over
   * USAGE_HOURLY_MAX_DAYS days is rounded to whole UTC days instead.
   */
  from: Joi.number().integer().min(0).required(),
  to: Joi.number().integer().min(0),
  group_by: Joi.string()
    .trim()
    .pattern(new RegExp(`^(${USAGE_DIMENSIONS.join('|')})(,(${USAGE_DIMENSIONS.join('|')}))*$`), 'a comma-separated list of dimensions')
    .default('day'),
  model: Joi.string().trim().min(1).max(200),
  /** A channel id, or `none` for tasks no channel served. */
  channel_id: Joi.alternatives().try(uuid(), Joi.string().valid('none')),
  format: Joi.string().valid('json', 'csv'),
};
/** GET /api/usage (admin): any account or key. */
export const usageQuerySchema = Joi.object({ ...usageFields, account_id: uuid(), key_id: uuid() });
/** GET /api/usage/self (API key): that key's own usage; no account or key filter. */
export const selfUsageQuerySchema = Joi.object(usageFields);

interface UsageParams {
  from: number;
  to?: number;
  group_by: string;
  model?: string;
  channel_id?: string;
  format?: 'json' | 'csv';
  account_id?: string;
  key_id?: string;
}

/** A group as the API shows it: money in currency units, the dimensions it was grouped by, percentiles in ms. */
export type UsageGroupView = Omit<UsageGroup, 'spend'> & { spend: number };
export const usageGroupView = (g: UsageGroup): UsageGroupView => ({ ...g, spend: fromMinor(g.spend) });

export interface UsageReport {
  from: number;
  to: number;
  group_by: UsageDimension[];
  /** Settled tasks up to this instant (unix seconds) are counted; later ones appear within a minute or so. Null: none yet. */
  counted_until: number | null;
  groups: UsageGroupView[];
}

/** The columns of the CSV, in order: the dimensions grouped by, then the figures. */
const FIGURES = ['tasks', 'task_failures', 'chat_calls', 'chat_failures', 'spend', 'task_p50_ms', 'task_p99_ms', 'chat_p50_ms', 'chat_p99_ms'] as const;
const DIM_COLUMN: Record<UsageDimension, keyof UsageGroupView> = {
  account: 'account_id',
  key: 'key_id',
  model: 'model',
  channel: 'channel_id',
  day: 'day',
  hour: 'hour',
};

/**
 * One CSV field (RFC 4180): quoted when it holds a comma, a quote, or a line break, quotes doubled. A text value a
 * spreadsheet would run as a formula (leading `=`, `+`, `-`, `@`, tab or CR) gets a leading `'` (OWASP's advice).
 */
export function csvField(v: string | number | null | undefined): string {
  if (v === null || v === undefined) return '';
  let s = String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function usageCsv(r: UsageReport): string {
  const cols = [...r.group_by.map((d) => DIM_COLUMN[d]), ...FIGURES];
  const lines = [cols.join(','), ...r.groups.map((g) => cols.map((c) => csvField(g[c] as string | number | null | undefined)).join(','))];
  return `${lines.join('\r\n')}\r\n`;
}

/** Usage for the management API (docs/management-api.md, "Usage"): validation, scope, and the rollup's answer. */
export class UsageService {
  private readonly repo: UsageRepository;

  constructor(ds: DataSource) {
    this.repo = new UsageRepository(ds);
  }

  /** `scope`: a key caller's own key and account (its query may not name another); absent: the admin's. */
  async report(query: unknown, scope?: { accountId: string; keyId: string }): Promise<{ report: UsageReport; format?: 'json' | 'csv' }> {
    const q = validate<UsageParams>(scope ? selfUsageQuerySchema : usageQuerySchema, query, 'query');
    const to = q.to ?? Math.ceil(Date.now() / 1000);
    const field = (f: string, message: string) => new DomainError('invalid_request', `Invalid query field '${f}': ${message}`, { field: f });
    if (to <= q.from) throw field('to', `must be after 'from'`);
    if (to - q.from > USAGE_MAX_DAYS * DAY_S) throw field('to', `the range is at most ${USAGE_MAX_DAYS} days`);
    const groupBy = [...new Set(q.group_by.split(','))] as UsageDimension[];
    if (groupBy.includes('hour') && groupBy.includes('day')) throw field('group_by', `'hour' and 'day' exclude each other`);
    if (groupBy.includes('hour') && to - q.from > USAGE_HOURLY_MAX_DAYS * DAY_S) {
      throw field('group_by', `'hour' needs a range of at most ${USAGE_HOURLY_MAX_DAYS} days`);
    }
    // hours for a short range; beyond, whole UTC days (the daily rollup alone)
    const range = usageRange(new Date(q.from * 1000), new Date(to * 1000));
    const groups = await this.repo.report({
      ...range,
      groupBy,
      accountId: scope?.accountId ?? q.account_id,
      apiKeyId: scope?.keyId ?? q.key_id,
      model: q.model,
      channelId: q.channel_id === 'none' ? NO_CHANNEL : q.channel_id,
    });
    const watermark = await this.repo.rolledUpTo();
    return {
      format: q.format,
      report: {
        from: range.from.getTime() / 1000,
        to: range.to.getTime() / 1000,
        group_by: groupBy,
        counted_until: watermark ? Math.floor(watermark.getTime() / 1000) : null,
        groups: groups.map(usageGroupView),
      },
    };
  }
}
