/**
 * Writes packages/sdk/src/generated/models.ts from the model registry (libs/contracts): one request interface per
 * model from the JSON Schema the catalog publishes (`parameters.input_schema`), the per-model discriminated unions
 * the SDK's `images.generate` / `videos.generate` take, and one interface per art-suite action with its path.
 *
 *   npm run gen:sdk          # rewrite the file
 *   npm run gen:sdk -- --check   # exit 1 when the file is stale (the unit test test/sdk/generated-models.test.ts does the same)
 *
 * The interfaces are closed (no index signature) even where the server tolerates extra fields: a field the contract
 * does not name is a compile error in the SDK, which is the point of typing it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { listModels, type JsonSchema, type ModelDefinition } from '@gmg/contracts';

export const SDK_MODELS_FILE = path.join(__dirname, '..', 'packages', 'sdk', 'src', 'generated', 'models.ts');

type Schema = JsonSchema & {
  type?: string | string[];
  enum?: unknown[];
  anyOf?: Schema[];
  items?: Schema;
  properties?: Record<string, Schema | boolean>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  description?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
};

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const key = (k: string): string => (IDENT.test(k) ? k : JSON.stringify(k));
const literal = (v: unknown): string => JSON.stringify(v);

/** `lumen-2-pro` → `Lumen2Pro`, `wave2.6-i2v-flash` → `Wave26I2vFlash`. */
export function pascal(name: string): string {
  return name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((p) => p[0]!.toUpperCase() + p.slice(1))
    .join('');
}

const baseType = (t: string | undefined): string => {
  switch (t) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    default:
      return 'unknown';
  }
};

/** The TypeScript type of a (sub-)schema. Literal unions keep editor completion; an open string stays `string & {}`. */
function tsType(s: Schema | boolean, indent: string): string {
  // `false`: the field is refused for this model (a compile error if set)
  if (s === false) return 'never';
  if (s === true) return 'unknown';
  if (Array.isArray(s.enum)) return s.enum.map(literal).join(' | ');
  const shaping = (alt: Schema): boolean => Boolean(alt.enum || alt.type || alt.anyOf || alt.properties);
  // an anyOf of bare constraints (item counts, lengths) does not change the type
  if (Array.isArray(s.anyOf) && s.anyOf.some(shaping)) {
    const parts = s.anyOf.map((alt) => (shaping(alt) ? tsType({ type: s.type, ...alt }, indent) : baseType(typeof s.type === 'string' ? s.type : undefined)));
    const literals = parts.filter((p) => p.startsWith('"') || /^-?\d/.test(p) || p === 'true' || p === 'false');
    const open = [...new Set(parts.filter((p) => !literals.includes(p)))].map((p) => (p === 'string' && literals.length ? '(string & {})' : p));
    return [...new Set([...literals.flatMap((l) => l.split(' | ')), ...open])].join(' | ');
  }
  if (Array.isArray(s.type)) return s.type.map((t) => baseType(t)).join(' | ');
  if (s.type === 'array') {
    const item = s.items ? tsType(s.items, indent) : 'unknown';
    return item.includes(' ') ? `Array<${item}>` : `${item}[]`;
  }
  if (s.type === 'object') {
    const props = Object.entries(s.properties ?? {});
    if (!props.length) return 'Record<string, unknown>';
    return `{\n${objectBody(s, `${indent}  `)}${indent}}`;
  }
  return baseType(s.type);
}

/** One JSDoc line from a property's description and constraints. */
function doc(s: Schema | boolean): string | undefined {
  if (s === false) return 'not accepted by this model';
  if (s === true) return undefined;
  const bits: string[] = [];
  if (s.description) bits.push(s.description);
  const range = (lo: number | undefined, hi: number | undefined, unit: string) =>
    lo !== undefined && hi !== undefined ? `${lo}..${hi}${unit}` : lo !== undefined ? `>= ${lo}${unit}` : hi !== undefined ? `<= ${hi}${unit}` : undefined;
  const r = range(s.minimum, s.maximum, '') ?? range(s.minLength, s.maxLength, ' characters') ?? range(s.minItems, s.maxItems, ' items');
  if (r) bits.push(r);
  if (s.default !== undefined) bits.push(`default ${JSON.stringify(s.default)}`);
  if (!bits.length) return undefined;
  return bits.join('; ').replace(/\*\//g, '*\\/').replace(/\s+/g, ' ');
}

function objectBody(s: Schema, indent: string): string {
  const required = new Set(s.required ?? []);
  let out = '';
  for (const [name, prop] of Object.entries(s.properties ?? {})) {
    const d = doc(prop);
    if (d) out += `${indent}/** ${d} */\n`;
    out += `${indent}${key(name)}${required.has(name) ? '' : '?'}: ${tsType(prop, indent)};\n`;
  }
  return out;
}

interface Entry {
  typeName: string;
  names: string[];
  title: string;
  schema: Schema;
}

function requestInterface(e: Entry): string {
  const schema: Schema = { ...e.schema, properties: { ...(e.schema.properties ?? {}) } };
  // `model` names every callable name of the model (its aliases behave the same, spec 9)
  const model = schema.properties!.model;
  if (model && typeof model === 'object') schema.properties!.model = { ...model, enum: e.names };
  return `/** ${e.title} */\nexport interface ${e.typeName} {\n${objectBody(schema, '  ')}}\n`;
}

const contractModels = (category: 'image' | 'video'): ModelDefinition[] => listModels().filter((m) => m.category === category && m.contract);

/** The whole generated file, deterministic (the registry's order). */
export function renderSdkModels(): string {
  const parts: string[] = [
    '// GENERATED by scripts/gen-sdk-types.ts from the model registry (libs/contracts) — do not edit.',
    '// Regenerate with `npm run gen:sdk`; test/sdk/generated-models.test.ts fails when this file is stale.',
    '// Closed interfaces: a field a model does not take is a compile error (the server may tolerate it; the SDK does not).',
    '',
  ];
  const unions: Record<'image' | 'video', string[]> = { image: [], video: [] };
  for (const category of ['image', 'video'] as const) {
    for (const m of contractModels(category)) {
      const c = m.contract!;
      const typeName = `${pascal(m.id)}Request`;
      unions[category].push(typeName);
      parts.push(
        requestInterface({
          typeName,
          names: [m.id, ...m.aliases],
          title: `\`${m.id}\`: ${c.method} ${c.endpoint} (ack shape ${c.ack}, about ${c.estimatedSeconds} s).`,
          schema: c.inputSchema as Schema,
        }),
      );
    }
  }
  parts.push(`/** Every image model's request: discriminated on \`model\`. */\nexport type ImageRequest =\n  | ${unions.image.join('\n  | ')};\n`);
  parts.push(`/** Every video model's request: discriminated on \`model\`. */\nexport type VideoRequest =\n  | ${unions.video.join('\n  | ')};\n`);
  parts.push(
    `/** @public Every image model name. */\nexport type ImageModel = ImageRequest['model'];\n/** @public Every video model name. */\nexport type VideoModel = VideoRequest['model'];\n`,
  );

  const artgen = listModels().filter((m) => m.actionContracts);
  const actions: Array<[string, string, string]> = [];
  for (const m of artgen) {
    for (const [action, c] of Object.entries(m.actionContracts!)) {
      const typeName = `${pascal(m.id)}${pascal(action)}Request`;
      actions.push([action, typeName, c.endpoint]);
      parts.push(
        requestInterface({
          typeName,
          names: [m.id, ...m.aliases],
          title: `Art suite \`${action}\`: ${c.method} ${c.endpoint}.`,
          schema: c.inputSchema as Schema,
        }),
      );
    }
  }
  parts.push(
    `/** The art suite's actions and their request bodies. */\nexport interface ArtgenRequests {\n${actions.map(([a, t]) => `  ${key(a)}: ${t};\n`).join('')}}\n`,
  );
  parts.push(`export type ArtgenAction = keyof ArtgenRequests;\n`);
  parts.push(
    `/** The path of each art-suite action. */\nexport const ARTGEN_PATHS: Readonly<Record<ArtgenAction, string>> = {\n${actions.map(([a, , p]) => `  ${key(a)}: ${literal(p)},\n`).join('')}};\n`,
  );
  return parts.join('\n');
}

if (require.main === module) {
  const want = renderSdkModels();
  if (process.argv.includes('--check')) {
    const have = readFileSync(SDK_MODELS_FILE, 'utf8');
    if (have !== want) {
      console.error(`${path.relative(process.cwd(), SDK_MODELS_FILE)} is stale: run npm run gen:sdk`);
      process.exit(1);
    }
    console.log('sdk models: up to date');
  } else {
    writeFileSync(SDK_MODELS_FILE, want);
    console.log(`wrote ${path.relative(process.cwd(), SDK_MODELS_FILE)}`);
  }
}
