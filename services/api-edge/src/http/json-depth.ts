import { DomainError } from '@gmg/errors';

/**
 * The deepest nesting of objects and arrays a JSON body may have (rule `max_json_depth`, docs/errors.md). Every
 * contract of the spec nests a few levels; 128 is the default recursion limit of common parsers (serde_json) and
 * leaves any recursive walk of a body (validation, JSON.stringify, a fingerprint) far from the stack's end: a body
 * nested 20,000 deep made one of them throw RangeError (500) before this check.
 */
export const MAX_JSON_DEPTH = 128;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;

/** Whether the quote at `i` is escaped (an odd run of backslashes before it). */
function escaped(buf: Uint8Array, i: number): boolean {
  let n = 0;
  for (let j = i - 1; j >= 0 && buf[j] === BACKSLASH; j--) n++;
  return n % 2 === 1;
}

/**
 * The deepest nesting in the bytes of a JSON text, stopping as soon as it passes `stopAt`. Strings are skipped with
 * `indexOf` (native), so a body that is mostly one large Base64 string costs next to nothing; a malformed text
 * gives some number and is left for the parser to refuse.
 */
export function jsonDepth(buf: Buffer, stopAt = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (c === QUOTE) {
      let end = buf.indexOf(QUOTE, i + 1);
      while (end !== -1 && escaped(buf, end)) end = buf.indexOf(QUOTE, end + 1);
      if (end === -1) return deepest;
      i = end;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > deepest) deepest = depth;
      if (deepest > stopAt) return deepest;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    }
  }
  return deepest;
}

/** 400 in the spec's shape when a JSON body nests deeper than MAX_JSON_DEPTH; call it before the body is parsed. */
export function assertJsonDepth(buf: Buffer): void {
  if (jsonDepth(buf, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw new DomainError('invalid_json', `Request body nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels (rule max_json_depth)`, {
      field: '',
      rule: 'max_json_depth',
      limit: MAX_JSON_DEPTH,
    });
  }
}
