import type { NormalizedRequest } from '@gmg/contracts';

/** A field of our request that a protocol cannot carry for the request's model (a 400 naming it, before money). */
export interface Unsupported {
  /** Dotted path in the request body (`model` when the protocol serves no such model). */
  field: string;
  message: string;
}

/** The parts of a channel a translation reads (structurally ChannelTarget's). */
interface ChannelView {
  modelMap: Readonly<Record<string, string>>;
  settings: Readonly<{ body?: Record<string, unknown> }>;
}

/**
 * How one field of our validated request reaches a vendor (CONVENTIONS "what a vendor supports is declared"):
 * - `to`: carried under the vendor's name, converted by `map` when given (`map` answering undefined leaves it out);
 * - `drop`: accepted and not sent, for the documented reason (the vendor has no such knob and its default matches,
 *   or the value is our default);
 * - `refuse`: the vendor cannot honour it: a request carrying it is refused with a 400 naming the field (or goes to
 *   another channel that can), before any money moves.
 * A body field that the family's table does not list is refused too: nothing is sent that was not declared.
 */
export type FieldRule = { to: string; map?: (value: unknown, req: NormalizedRequest) => unknown; note?: string } | { drop: string } | { refuse: string };

/** One model family on one protocol. */
export interface FamilyTranslation {
  /** Our family word (`lumen-2`, `pixel-v6`, …), for the docs. */
  family: string;
  /** The public model ids (canonical, aliases resolved) this row serves. */
  models: readonly string[];
  /** What the vendor calls the model when the channel's `model_map` names none (documented); default: our id. */
  defaultUpstreamModel?: string;
  fields: Readonly<Record<string, FieldRule>>;
  /** Vendor inputs made from what the contract derived (dimensions, counts), not from one field. */
  derive?: (req: NormalizedRequest) => Record<string, unknown>;
  /** A rule across fields the table cannot say (`field` names the one to change). */
  refine?: (req: NormalizedRequest) => Unsupported | undefined;
}

/** A protocol's whole declaration: its vendor documentation and one row per family it can serve. */
export interface ProtocolTranslation {
  protocol: string;
  /** The vendor's public documentation this table follows (cited in docs/upstreams.md). */
  docs: readonly string[];
  families: readonly FamilyTranslation[];
}

const isEmpty = (v: unknown): boolean => v === undefined || v === null || (Array.isArray(v) && v.length === 0);

export function familyOf(t: ProtocolTranslation, model: string): FamilyTranslation | undefined {
  return t.families.find((f) => f.models.includes(model));
}

/** The first field of `req` the protocol cannot carry, or undefined (pure; the edge and the worker both ask). */
export function checkTranslation(t: ProtocolTranslation, req: NormalizedRequest): Unsupported | undefined {
  const fam = familyOf(t, req.model);
  if (!fam) return { field: 'model', message: `\`${req.requestedModel}\` cannot be served through the ${t.protocol} protocol` };
  for (const [field, value] of Object.entries(req.upstreamBody)) {
    if (field === 'model' || isEmpty(value)) continue;
    const rule = fam.fields[field];
    if (!rule) return { field, message: `\`${field}\` is not supported for ${req.requestedModel} through the ${t.protocol} protocol` };
    if ('refuse' in rule)
      return { field, message: `\`${field}\` is not supported for ${req.requestedModel} through the ${t.protocol} protocol: ${rule.refuse}` };
  }
  return fam.refine?.(req);
}

/**
 * The vendor's input for `req` (call `checkTranslation` first: a refused field throws here, as a bug): the channel's
 * fixed extra parameters, then what the family derives, then each carried field under the vendor's name.
 */
export function translateInput(t: ProtocolTranslation, ch: Pick<ChannelView, 'settings'>, req: NormalizedRequest): Record<string, unknown> {
  const fam = familyOf(t, req.model);
  if (!fam) throw new Error(`${t.protocol}: no translation for model ${req.model}`);
  const out: Record<string, unknown> = { ...(ch.settings.body ?? {}), ...(fam.derive?.(req) ?? {}) };
  for (const [field, value] of Object.entries(req.upstreamBody)) {
    if (field === 'model' || isEmpty(value)) continue;
    const rule = fam.fields[field];
    if (!rule || 'refuse' in rule) throw new Error(`${t.protocol}: field ${field} of ${req.model} is not carried`);
    if ('drop' in rule) continue;
    const v = rule.map ? rule.map(value, req) : value;
    if (v !== undefined) out[rule.to] = v;
  }
  return out;
}

/** The vendor's model name on a channel: the channel's map, else the family's documented default, else our id. */
export function vendorModelOf(t: ProtocolTranslation, ch: Pick<ChannelView, 'modelMap'>, req: Pick<NormalizedRequest, 'model' | 'requestedModel'>): string {
  return ch.modelMap[req.requestedModel] ?? ch.modelMap[req.model] ?? familyOf(t, req.model)?.defaultUpstreamModel ?? req.model;
}

/** The table as Markdown rows (docs/upstreams.md is generated from the same declaration). */
export function translationMarkdown(t: ProtocolTranslation): string {
  const lines: string[] = [];
  for (const f of t.families) {
    lines.push(`#### \`${t.protocol}\` · ${f.family}`, '');
    lines.push(
      `Models: ${f.models.map((m) => `\`${m}\``).join(', ')}${f.defaultUpstreamModel ? `; vendor model by default: \`${f.defaultUpstreamModel}\`` : ''}.`,
      '',
    );
    lines.push('| our field | vendor |', '| - | - |');
    for (const [field, rule] of Object.entries(f.fields)) {
      const to =
        'to' in rule ? `\`${rule.to}\`${rule.note ? ` (${rule.note})` : ''}` : 'drop' in rule ? `not sent: ${rule.drop}` : `**refused**: ${rule.refuse}`;
      lines.push(`| \`${field}\` | ${to} |`);
    }
    lines.push('');
  }
  return lines.join('\n');
}
