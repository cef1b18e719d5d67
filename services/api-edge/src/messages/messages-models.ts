import type { IncomingHttpHeaders } from 'node:http';
import type { ModelListItem } from '@gmg/contracts';

/**
 * The vendor's clients list models with their own headers (`x-api-key` and a protocol version): they get the
 * vendor's model-list format (spec 4.1 rule 7, "other vendor-dialect model lists"), so an SDK's `models.list()`
 * works. Everyone else gets the spec's list envelope.
 */
export const wantsVendorModelList = (h: IncomingHttpHeaders): boolean =>
  typeof h['x-api-key'] === 'string' && (h['anthropic-version'] !== undefined || h['msgproto-version'] !== undefined);

/** The models the key can call on POST /v1/messages, in the vendor's list shape (one page: the list is short). */
export function vendorModelList(items: readonly ModelListItem[]) {
  const data = items
    .filter((i) => i.supported_endpoint_types.includes('messages'))
    .map((i) => ({ type: 'model' as const, id: i.id, display_name: i.id, created_at: new Date(i.created * 1000).toISOString() }));
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}
