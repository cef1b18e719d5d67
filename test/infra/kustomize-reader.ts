/**
 * A kustomize renderer for exactly the features k8s/ uses, and the Kubernetes / KEDA / Prometheus-operator schemas
 * that validate what it renders, offline (test/infra/k8s-manifests.test.ts, k8s-production.test.ts).
 *
 * Rendering: kubectl is not on every machine (CI's is fresh, with no internet), so the tests render the
 * kustomizations themselves: `namespace`, `resources` (files, or folders with their own kustomization.yaml: a base),
 * `components`, `configMapGenerator` without hash suffixes, `images`, and `patches` that are RFC 6902 JSON patches
 * (add, replace, remove, test) aimed by `target` kind and name. Any other key, and strategic-merge patches, are
 * REFUSED, so the reader can never silently render something kustomize would render differently. Where kubectl is
 * installed, k8s-manifests.test.ts compares its render with this one, object by object.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import YAML from 'yaml';
import * as k8s from 'kubernetes-models';
import * as keda from '@kubernetes-models/keda';
import * as prometheusOperator from '@kubernetes-models/prometheus-operator';

export type Obj = Record<string, any>;

export const ROOT = path.resolve(__dirname, '../..');
export const K8S = path.join(ROOT, 'k8s');
export const BASE = path.join(K8S, 'base');

// ---------------------------------------------------------------- the reader
const SUPPORTED_KEYS = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'components', 'images', 'configMapGenerator', 'generatorOptions', 'patches']);
/** Kinds kustomize does not put in the kustomization's namespace (the cluster-scoped ones k8s/ may use). */
export const CLUSTER_SCOPED = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'ClusterTriggerAuthentication',
  'PersistentVolume',
  'StorageClass',
]);

interface ImageRule {
  name: string;
  newName?: string;
  newTag?: string;
  digest?: string;
}

function applyImages(obj: Obj, rules: ImageRule[]): void {
  const podSpec: Obj | undefined = obj.spec?.template?.spec ?? obj.spec?.jobTemplate?.spec?.template?.spec;
  if (!podSpec) return;
  for (const c of [...(podSpec.containers ?? []), ...(podSpec.initContainers ?? [])] as Obj[]) {
    const image = String(c.image);
    const at = image.indexOf('@');
    const colon = image.lastIndexOf(':');
    const name = at >= 0 ? image.slice(0, at) : colon > image.lastIndexOf('/') ? image.slice(0, colon) : image;
    const rule = rules.find((r) => r.name === name);
    if (!rule) continue;
    const tag = rule.digest ? `@${rule.digest}` : rule.newTag ? `:${rule.newTag}` : image.slice(name.length);
    c.image = `${rule.newName ?? name}${tag}`;
  }
}

interface GeneratorOptions {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  disableNameSuffixHash?: boolean;
}
interface ConfigMapGenerator {
  name: string;
  files?: string[];
  literals?: string[];
  options?: GeneratorOptions;
  [other: string]: unknown;
}

/**
 * `configMapGenerator` (files, literals, labels, annotations) without the name hash suffix only: the reader does not
 * compute kustomize's hash, so a generator must set `disableNameSuffixHash: true` (its own options or
 * generatorOptions), as dashboards picked up by a Grafana sidecar by label usually do.
 */
function generateConfigMap(dir: string, g: ConfigMapGenerator, defaults: GeneratorOptions): Obj {
  const unsupported = Object.keys(g).filter((k) => !['name', 'namespace', 'files', 'literals', 'options'].includes(k));
  if (unsupported.length) throw new Error(`configMapGenerator ${g.name} uses ${unsupported.join(', ')}: teach test/infra/kustomize-reader.ts to render it`);
  const options = { ...defaults, ...g.options };
  if (options.disableNameSuffixHash !== true) {
    throw new Error(
      `configMapGenerator ${g.name}: the reader does not compute name hash suffixes; set disableNameSuffixHash: true or teach test/infra/kustomize-reader.ts`,
    );
  }
  const data: Record<string, string> = {};
  for (const f of g.files ?? []) {
    const [key, file] = f.includes('=') ? [f.slice(0, f.indexOf('=')), f.slice(f.indexOf('=') + 1)] : [path.basename(f), f];
    data[key] = readFileSync(path.join(dir, file), 'utf8');
  }
  for (const l of g.literals ?? []) data[l.slice(0, l.indexOf('='))] = l.slice(l.indexOf('=') + 1);
  const labels = { ...defaults.labels, ...g.options?.labels };
  const annotations = { ...defaults.annotations, ...g.options?.annotations };
  const metadata: Obj = { name: g.name };
  if (typeof g.namespace === 'string') metadata.namespace = g.namespace;
  if (Object.keys(labels).length) metadata.labels = labels;
  if (Object.keys(annotations).length) metadata.annotations = annotations;
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata, data };
}

/** Renders one kustomization folder as the list of objects kustomize would output (order aside). */
export function renderKustomization(dir: string): Obj[] {
  const k = YAML.parse(readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8')) as Obj;
  const unsupported = Object.keys(k).filter((key) => !SUPPORTED_KEYS.has(key));
  if (unsupported.length) {
    throw new Error(`${path.relative(ROOT, dir)}/kustomization.yaml uses ${unsupported.join(', ')}: teach test/infra/kustomize-reader.ts to render it`);
  }
  const objects: Obj[] = [];
  for (const entry of (k.resources ?? []) as string[]) {
    const abs = path.join(dir, entry);
    if (existsSync(path.join(abs, 'kustomization.yaml'))) objects.push(...renderKustomization(abs));
    else
      objects.push(
        ...YAML.parseAllDocuments(readFileSync(abs, 'utf8'))
          .map((d) => d.toJS() as Obj)
          .filter((o) => o !== null),
      );
  }
  for (const g of (k.configMapGenerator ?? []) as ConfigMapGenerator[]) objects.push(generateConfigMap(dir, g, (k.generatorOptions ?? {}) as GeneratorOptions));
  // Components (kind: Component) add their objects to this kustomization's, before its namespace and images apply.
  for (const entry of (k.components ?? []) as string[]) objects.push(...renderKustomization(path.join(dir, entry)));
  for (const p of (k.patches ?? []) as PatchEntry[]) applyPatchEntry(dir, p, objects);
  for (const o of objects) {
    if (k.namespace && !CLUSTER_SCOPED.has(o.kind)) o.metadata = { ...o.metadata, namespace: k.namespace };
    applyImages(o, (k.images ?? []) as ImageRule[]);
  }
  return objects;
}

export const idOf = (o: Obj): string => `${o.apiVersion} ${o.kind} ${o.metadata?.namespace ?? '-'}/${o.metadata?.name}`;

// ---------------------------------------------------------------- the schemas
interface ModelClass {
  apiVersion: string;
  kind: string;
  new (data: Obj): { validate(): void };
}
const isModel = (v: unknown): v is ModelClass =>
  typeof v === 'function' && typeof (v as Partial<ModelClass>).apiVersion === 'string' && typeof (v as Partial<ModelClass>).kind === 'string';

/** apiVersion + kind → model class, from every group and version the packages export. */
function collectModels(ns: unknown, out = new Map<string, ModelClass>(), depth = 0): Map<string, ModelClass> {
  if (depth > 4 || !ns || typeof ns !== 'object') return out;
  for (const v of Object.values(ns as Obj)) {
    if (isModel(v)) out.set(`${v.apiVersion} ${v.kind}`, v);
    else collectModels(v, out, depth + 1);
  }
  return out;
}
export const MODELS = collectModels({ k8s, keda, prometheusOperator });

export function schemaErrors(o: Obj): string | null {
  const Model = MODELS.get(`${o.apiVersion} ${o.kind}`);
  if (!Model) return `no schema for ${o.apiVersion} ${o.kind}`;
  try {
    new Model(o).validate();
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

// ---------------------------------------------------------------- patches (RFC 6902 only)
type PatchOp = { op: 'add' | 'replace' | 'remove' | 'test'; path: string; value?: unknown };
interface PatchEntry {
  path?: string;
  patch?: string;
  target?: { kind?: string; name?: string; [other: string]: unknown };
  [other: string]: unknown;
}

const pointer = (p: string): string[] =>
  p === ''
    ? []
    : p
        .slice(1)
        .split('/')
        .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));

/** Applies RFC 6902 operations to `doc` in place (add with `-` appends); a failed `test` or a missing path throws. */
export function applyJson6902(doc: Obj, ops: PatchOp[]): void {
  for (const { op, path: at, value } of ops) {
    const keys = pointer(at);
    const last = keys.pop();
    if (last === undefined) throw new Error(`patch ${op} on the document root is not supported`);
    let parent: any = doc;
    for (const k of keys) {
      parent = Array.isArray(parent) ? parent[Number(k)] : parent?.[k];
      if (parent === undefined || parent === null || typeof parent !== 'object') throw new Error(`patch ${op} ${at}: ${k} does not exist`);
    }
    const has = Array.isArray(parent) ? /^\d+$/.test(last) && Number(last) < parent.length : Object.prototype.hasOwnProperty.call(parent, last);
    if (op === 'test') {
      if (!has || JSON.stringify(parent[Array.isArray(parent) ? Number(last) : last]) !== JSON.stringify(value)) {
        throw new Error(`patch test ${at} failed: expected ${JSON.stringify(value)}`);
      }
    } else if (op === 'add' && Array.isArray(parent)) {
      if (last === '-') parent.push(structuredClone(value));
      else if (/^\d+$/.test(last) && Number(last) <= parent.length) parent.splice(Number(last), 0, structuredClone(value));
      else throw new Error(`patch add ${at}: bad index`);
    } else if (op === 'add') {
      parent[last] = structuredClone(value);
    } else if (op === 'replace' || op === 'remove') {
      if (!has) throw new Error(`patch ${op} ${at}: nothing there`);
      if (Array.isArray(parent) && op === 'remove') parent.splice(Number(last), 1);
      else if (op === 'remove') delete parent[last];
      else parent[Array.isArray(parent) ? Number(last) : last] = structuredClone(value);
    } else {
      throw new Error(`patch op ${String(op)} is not rendered by test/infra/kustomize-reader.ts`);
    }
  }
}

/** One `patches` entry: a JSON 6902 list (file or inline) on every object of the target kind and name (at least one). */
function applyPatchEntry(dir: string, p: PatchEntry, objects: Obj[]): void {
  const extra = Object.keys(p).filter((k) => !['path', 'patch', 'target'].includes(k));
  const targetExtra = Object.keys(p.target ?? {}).filter((k) => !['kind', 'name'].includes(k));
  if (extra.length || targetExtra.length || !p.target) {
    throw new Error(`patch ${p.path ?? '(inline)'}: only path/patch with a target kind/name are rendered by test/infra/kustomize-reader.ts`);
  }
  const ops = YAML.parse(p.path ? readFileSync(path.join(dir, p.path), 'utf8') : String(p.patch)) as unknown;
  if (!Array.isArray(ops)) throw new Error(`patch ${p.path ?? '(inline)'} is a strategic-merge patch: the reader renders JSON 6902 patches only`);
  const targets = objects.filter((o) => (!p.target!.kind || o.kind === p.target!.kind) && (!p.target!.name || o.metadata?.name === p.target!.name));
  if (!targets.length) throw new Error(`patch ${p.path ?? '(inline)'} targets nothing (${JSON.stringify(p.target)})`);
  for (const o of targets) applyJson6902(o, ops as PatchOp[]);
}
