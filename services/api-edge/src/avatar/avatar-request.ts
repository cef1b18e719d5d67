import Joi from 'joi';
import { mediaUrlProblem, type MediaUrlRef } from '@gmg/contracts';
import { DomainError } from '@gmg/errors';

/** Spec 4.8 / 8: at most 20 assets per request. */
export const AVATAR_MAX_ASSETS = 20;
export const ASSET_TYPES = ['Image', 'Video', 'Audio'] as const;
export type AvatarAssetType = (typeof ASSET_TYPES)[number];

/** A valid submission, defaults applied; `assets` also holds the single-asset shorthand. */
export interface AvatarRequest {
  assets: Array<{ url: string; name: string }>;
  assetType: AvatarAssetType;
  projectName: string;
  group?: { name: string; description: string };
  groupId?: string;
  /** The asset URLs that are not the gateway's own upload links: their hosts are resolved at submit. */
  mediaUrls: MediaUrlRef[];
}

const text = (max: number) => Joi.string().trim().min(1).max(max);
const assetItem = Joi.object({ url: text(4096).required(), name: text(200).required() }).unknown(true);

const schema = Joi.object({
  assets: Joi.array().items(assetItem).min(1).max(AVATAR_MAX_ASSETS),
  url: text(4096),
  name: text(200),
  asset_type: Joi.string()
    .valid(...ASSET_TYPES)
    .default('Image'),
  project_name: text(200).default('default'),
  group: Joi.object({ name: text(200).required(), description: Joi.string().trim().max(2000).allow('').default('') }).unknown(true),
  group_id: text(200),
}).unknown(true);

const RULES: Record<string, string> = {
  'any.required': 'required',
  'any.only': 'enum',
  'string.base': 'type',
  'string.empty': 'minLength',
  'string.min': 'minLength',
  'string.max': 'maxLength',
  'array.base': 'type',
  'array.min': 'minItems',
  'array.max': 'maxItems',
  'object.base': 'type',
};

const bad = (field: string, rule: string, message: string) => new DomainError('invalid_request', message, { field, rule });

/** Rules Joi's first-error report would phrase poorly: which form of the request, and which group. */
function checkShape(b: Record<string, unknown>): void {
  const has = (k: string) => b[k] !== undefined;
  if (has('assets') && (has('url') || has('name'))) {
    const field = has('url') ? 'url' : 'name';
    throw bad(
      field,
      'exclusive',
      `\`${field}\`: the single-asset shorthand (\`url\` + \`name\`) cannot be sent together with \`assets\`; send one or the other`,
    );
  }
  if (!has('assets')) {
    if (!has('url') && !has('name'))
      throw bad('assets', 'required', '`assets` is required: 1 to 20 items of {url, name} (or the single-asset shorthand `url` + `name`)');
    if (!has('url')) throw bad('url', 'required', '`url` is required with `name` (single-asset shorthand)');
    if (!has('name')) throw bad('name', 'required', '`name` is required with `url` (single-asset shorthand)');
  }
  if (has('group') && has('group_id')) {
    throw bad('group_id', 'exclusive', '`group_id` cannot be sent together with `group`: name an existing group, or describe a new one');
  }
}

/**
 * Validates and normalizes a `POST /v1/motion2/private-avatar` body (spec 4.8). Every refusal names the field and
 * the rule; asset URLs get the same media-URL check as every model's (no private, loopback or metadata addresses).
 */
export function parseAvatarRequest(body: unknown, opts: { trustedUrlPrefixes?: readonly string[] } = {}): AvatarRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw bad('', 'type', 'Request body must be a JSON object');
  checkShape(body as Record<string, unknown>);
  const result = schema.validate(body, { abortEarly: true, convert: true });
  if (result.error) {
    const d = result.error.details[0]!;
    const field = d.path.join('.');
    const detail = d.message.replace(/^"[^"]*"\s*/, '');
    throw bad(field, RULES[d.type] ?? d.type, `\`${field}\` ${detail}`);
  }
  const v = result.value as Record<string, unknown>;
  const assets = (v.assets as Array<{ url: string; name: string }> | undefined)?.map((a) => ({ url: a.url, name: a.name })) ?? [
    { url: v.url as string, name: v.name as string },
  ];
  const mediaUrls: MediaUrlRef[] = [];
  assets.forEach((a, i) => {
    const field = v.assets ? `assets.${i}.url` : 'url';
    const problem = mediaUrlProblem(a.url, { trustedPrefixes: opts.trustedUrlPrefixes });
    if (problem) throw bad(field, 'media-url', `\`${field}\`: ${problem}`);
    if (!opts.trustedUrlPrefixes?.some((p) => p.length > 0 && new URL(a.url).href.startsWith(p))) mediaUrls.push({ field, url: a.url });
  });
  const group = v.group as { name: string; description: string } | undefined;
  return {
    assets,
    assetType: v.asset_type as AvatarAssetType,
    projectName: v.project_name as string,
    ...(group ? { group: { name: group.name, description: group.description } } : {}),
    ...(v.group_id !== undefined ? { groupId: v.group_id as string } : {}),
    mediaUrls,
  };
}
