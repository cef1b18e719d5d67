import type { AssetGroupRecord, AssetListQuery, AssetRecord, AssetStatus } from '@gmg/db';
import { DomainError } from '@gmg/errors';

/** Page size of the browse API: default 20, at most 100. */
export const PAGE_DEFAULT = 20;
export const PAGE_MAX = 100;
const STATUSES: readonly AssetStatus[] = ['Pending', 'Active', 'Rejected', 'Failed'];
const ID = /^[A-Za-z0-9_-]{1,200}$/;

const secs = (d: Date): number => Math.floor(d.getTime() / 1000);
const bad = (field: string, rule: string, message: string) => new DomainError('invalid_request', message, { field, rule });

/** An asset as the browse API and the task result show it (`asset_url` is what motion-2.0 takes). */
export function assetView(a: AssetRecord): Record<string, unknown> {
  return {
    asset_id: a.id,
    asset_url: `asset://${a.id}`,
    status: a.status,
    ...(a.reason ? { reason: a.reason } : {}),
    name: a.name,
    asset_type: a.assetType,
    url: a.url,
    group_id: a.groupId,
    project_name: a.projectName,
    task_id: a.taskId,
    created: secs(a.createdAt),
  };
}

export function groupView(g: AssetGroupRecord): Record<string, unknown> {
  return {
    id: g.id,
    object: 'motion.avatar.group',
    name: g.name,
    description: g.description,
    auto_created: g.autoCreated,
    asset_count: g.assetCount,
    created: secs(g.createdAt),
  };
}

/** `{code, data: {object: 'list', items, has_more, next_after}}`: `next_after` is the cursor of the next page. */
export function page<T>(items: T[], hasMore: boolean, idOf: (t: T) => string, view: (t: T) => Record<string, unknown>) {
  const last = items[items.length - 1];
  return { code: 200, data: { object: 'list', items: items.map(view), has_more: hasMore, next_after: hasMore && last ? idOf(last) : null } };
}

const one = (q: Record<string, unknown>, k: string): string | undefined => {
  const v = q[k];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw bad(k, 'type', `\`${k}\` must be given once, as a string`);
  return v;
};

/** `limit` and `after` of a list query. */
export function parsePaging(q: Record<string, unknown>): { limit: number; after?: string } {
  const rawLimit = one(q, 'limit');
  let limit = PAGE_DEFAULT;
  if (rawLimit !== undefined) {
    limit = Number(rawLimit);
    if (!/^\d+$/.test(rawLimit) || limit < 1 || limit > PAGE_MAX)
      throw bad('limit', 'range', `\`limit\` must be an integer from 1 to ${PAGE_MAX} (got '${rawLimit}')`);
  }
  const after = one(q, 'after');
  if (after !== undefined && !ID.test(after)) throw bad('after', 'pattern', '`after` must be the `next_after` of the previous page');
  return { limit, ...(after ? { after } : {}) };
}

/** Query of `GET /v1/motion2/assets`: paging plus `group_id` and `status` filters. */
export function parseAssetQuery(q: Record<string, unknown>): AssetListQuery {
  const groupId = one(q, 'group_id');
  if (groupId !== undefined && !ID.test(groupId)) throw bad('group_id', 'pattern', '`group_id` must be a group id such as group_…');
  const status = one(q, 'status');
  if (status !== undefined && !STATUSES.includes(status as AssetStatus)) {
    throw bad('status', 'enum', `\`status\` must be one of ${STATUSES.join(', ')} (got '${status}')`);
  }
  return { ...parsePaging(q), ...(groupId ? { groupId } : {}), ...(status ? { status: status as AssetStatus } : {}) };
}
