import fc from 'fast-check';
import type { BuiltContract } from './define-contract';
import type { FieldSpec } from './field-dsl';

/** fast-check arbitraries derived from a contract's field DSL (test utility). */

const PUBLIC_URLS = ['https://cdn.example.com/a.png', 'http://images.example.org/b.jpg', 'https://media.example.net/v.mp4'];
const DATA_URI = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const junk = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string({ maxLength: 8 }),
  fc.constant([]),
  fc.constant({}),
);

export function validValue(f: FieldSpec): fc.Arbitrary<unknown> {
  switch (f.type) {
    case 'forbidden':
      return junk;
    case 'boolean':
      return fc.boolean();
    case 'integer':
    case 'number': {
      if (f.enum) return fc.constantFrom(...f.enum);
      const min = f.minimum ?? -1e6;
      const max = f.maximum ?? 1e6;
      return f.type === 'integer' ? fc.integer({ min: Math.ceil(min), max: Math.floor(max) }) : fc.double({ min, max, noNaN: true });
    }
    case 'string': {
      if (f.media === 'url') return fc.constantFrom(...PUBLIC_URLS);
      if (f.media === 'url-or-base64') return fc.constantFrom(...PUBLIC_URLS, DATA_URI);
      if (f.enum) {
        const values = fc.constantFrom(...f.enum);
        const cased = f.caseInsensitive ? fc.constantFrom(...f.enum.map((v) => v.toUpperCase()), ...f.enum.map((v) => v.toLowerCase())) : values;
        return f.orPattern
          ? fc.oneof(
              cased,
              fc.tuple(fc.integer({ min: 64, max: 2048 }), fc.integer({ min: 64, max: 2048 })).map(([w, h]) => `${w}x${h}`),
            )
          : cased;
      }
      if (f.pattern?.startsWith('^task_')) return fc.nat().map((n) => `task_${n.toString(36)}`);
      if (f.pattern?.startsWith('^asset://')) return fc.nat().map((n) => `asset://a${n.toString(36)}`);
      const max = f.maxLength;
      const min = f.minLength ?? 0;
      const base = fc.string({ minLength: Math.max(min, 1), maxLength: Math.min(max ?? 40, 40) }).filter((s) => /\S/.test(s));
      const edge = max !== undefined ? [fc.constant('x'.repeat(max)), fc.constant('😀'.repeat(max))] : [];
      return fc.oneof(base, ...edge);
    }
    case 'array': {
      const counts = f.counts;
      const minLength = f.minItems ?? 0;
      const maxLength = Math.min(f.maxItems ?? 4, 20);
      const arr = fc.array(validValue(f.items), { minLength, maxLength });
      return counts ? arr.filter((a) => counts.includes(a.length)) : arr;
    }
    case 'object': {
      const keys = Object.keys(f.properties);
      return fc.record(Object.fromEntries(keys.map((k) => [k, validValue(f.properties[k]!)])), {
        requiredKeys: (f.required ?? []) as string[],
      }) as fc.Arbitrary<unknown>;
    }
  }
}

export function invalidValue(f: FieldSpec): fc.Arbitrary<unknown> {
  const options: fc.Arbitrary<unknown>[] = [junk];
  switch (f.type) {
    case 'integer':
    case 'number':
      options.push(fc.constant('6'), fc.constant(1.5));
      if (f.minimum !== undefined) options.push(fc.constant(f.minimum - 1));
      if (f.maximum !== undefined) options.push(fc.constant(f.maximum + 1));
      if (f.enum) options.push(fc.constant(Math.max(...f.enum) + 1), fc.constant(Math.min(...f.enum) - 1));
      break;
    case 'string':
      options.push(fc.constant(''), fc.constant('   '), fc.constant('bogus-value'), fc.constant(6));
      if (f.maxLength !== undefined) options.push(fc.constant('x'.repeat(f.maxLength + 1)));
      if (f.media) options.push(fc.constant('ftp://cdn.example.com/a.png'), fc.constant('not a url'));
      if (f.orPattern) options.push(fc.constant('1024X768'), fc.constant('0x100'));
      break;
    case 'array':
      options.push(fc.constant('https://cdn.example.com/a.png'));
      options.push(fc.array(validValue(f.items), { minLength: (f.maxItems ?? 20) + 1, maxLength: (f.maxItems ?? 20) + 2 }));
      options.push(fc.array(invalidValue(f.items), { minLength: 1, maxLength: 2 }));
      if (f.minItems) options.push(fc.constant([]));
      if (f.counts) options.push(fc.array(validValue(f.items), { minLength: 2, maxLength: 2 }));
      break;
    case 'object':
      options.push(fc.constant({}), fc.constant([]));
      break;
    case 'boolean':
      options.push(fc.constant('true'), fc.constant(1));
      break;
    case 'forbidden':
      break;
  }
  return fc.oneof(...options);
}

/** A clean body also keeps the contract's pairing rules: no conflicting groups together, `together` groups whole. */
function withPairingRules(c: BuiltContract, body: Record<string, unknown>): Record<string, unknown> {
  for (const rule of c.bodySpec.conflicts ?? []) {
    if (rule.a.some((f) => body[f] !== undefined)) for (const f of rule.b) delete body[f];
  }
  for (const group of c.bodySpec.together ?? []) {
    if (!group.fields.every((f) => body[f] !== undefined)) for (const f of group.fields) delete body[f];
  }
  return body;
}

export function bodyArbitrary(c: BuiltContract, modelNames: string[], clean: boolean): fc.Arbitrary<Record<string, unknown>> {
  const entries = Object.entries(c.bodySpec.properties).map(([k, f]) => {
    const bad = clean ? 0 : 1;
    const value =
      k === 'model'
        ? fc.oneof({ weight: 9, arbitrary: fc.constantFrom(...modelNames) }, { weight: bad, arbitrary: invalidValue(f) })
        : fc.oneof({ weight: 4, arbitrary: validValue(f) }, { weight: bad, arbitrary: invalidValue(f) });
    // required fields are usually present; optional ones about half the time (clean bodies: fewer, to meet pairing rules)
    const presence = c.bodySpec.required.includes(k) ? (clean ? 1 : 0.95) : f.type === 'forbidden' && clean ? 0 : clean ? 0.3 : 0.5;
    return fc.tuple(
      fc.constant(k),
      fc.double({ min: 0, max: 1, noNaN: true }).chain((p) => (p < presence ? value.map((v) => ({ v })) : fc.constant(undefined))),
    );
  });
  return fc
    .tuple(fc.tuple(...entries), fc.option(fc.dictionary(fc.constantFrom('extra', 'metadata', 'user'), junk), { nil: undefined }))
    .map(([pairs, extra]) => {
      const body: Record<string, unknown> = { ...(extra ?? {}) };
      for (const [k, present] of pairs) if (present) body[k] = present.v;
      return clean ? withPairingRules(c, body) : body;
    });
}
