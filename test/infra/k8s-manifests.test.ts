/**
 * `kubectl kustomize k8s` renders, and every rendered manifest validates against the Kubernetes schemas, offline.
 *
 * Rendering: kubectl is not on every machine (CI's is fresh, with no internet), so the test renders the
 * kustomization itself with a small reader of exactly the features k8s/ uses — `namespace`, `resources` (files, or
 * folders with their own kustomization.yaml), `images` — and REFUSES any other key (patches, generators, …) so it can
 * never silently render something kustomize would render differently. Where kubectl is installed, its render is
 * compared with the reader's, object by object.
 *
 * Validation: the JSON schemas of Kubernetes 1.x (kubernetes-models), of KEDA (@kubernetes-models/keda) and of the
 * Prometheus operator (@kubernetes-models/prometheus-operator: ServiceMonitor, PrometheusRule, PodMonitor) ship in
 * npm packages and run in-process. A kind with no schema fails the test: add its model package here.
 * Limit (as with the API server's schemas): unknown nested fields are not reported, since the Kubernetes OpenAPI
 * schemas do not forbid additional properties; types, enums, required fields and formats are checked.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import YAML from 'yaml';
import * as k8s from 'kubernetes-models';
import * as keda from '@kubernetes-models/keda';
import * as prometheusOperator from '@kubernetes-models/prometheus-operator';

type Obj = Record<string, any>;

const ROOT = path.resolve(__dirname, '../..');
const K8S = path.join(ROOT, 'k8s');

// ---------------------------------------------------------------- the reader
const SUPPORTED_KEYS = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'components', 'images', 'configMapGenerator', 'generatorOptions']);
/** Kinds kustomize does not put in the kustomization's namespace (the cluster-scoped ones k8s/ may use). */
const CLUSTER_SCOPED = new Set([
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
  if (unsupported.length) throw new Error(`configMapGenerator ${g.name} uses ${unsupported.join(', ')}: teach test/infra/k8s-manifests.test.ts to render it`);
  const options = { ...defaults, ...g.options };
  if (options.disableNameSuffixHash !== true) {
    throw new Error(
      `configMapGenerator ${g.name}: the reader does not compute name hash suffixes; set disableNameSuffixHash: true or teach test/infra/k8s-manifests.test.ts`,
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
function renderKustomization(dir: string): Obj[] {
  const k = YAML.parse(readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8')) as Obj;
  const unsupported = Object.keys(k).filter((key) => !SUPPORTED_KEYS.has(key));
  if (unsupported.length) {
    throw new Error(`${path.relative(ROOT, dir)}/kustomization.yaml uses ${unsupported.join(', ')}: teach test/infra/k8s-manifests.test.ts to render it`);
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
  for (const o of objects) {
    if (k.namespace && !CLUSTER_SCOPED.has(o.kind)) o.metadata = { ...o.metadata, namespace: k.namespace };
    applyImages(o, (k.images ?? []) as ImageRule[]);
  }
  return objects;
}

const idOf = (o: Obj): string => `${o.apiVersion} ${o.kind} ${o.metadata?.namespace ?? '-'}/${o.metadata?.name}`;

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
const MODELS = collectModels({ k8s, keda, prometheusOperator });

function schemaErrors(o: Obj): string | null {
  const Model = MODELS.get(`${o.apiVersion} ${o.kind}`);
  if (!Model) return `no schema for ${o.apiVersion} ${o.kind}`;
  try {
    new Model(o).validate();
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

// ---------------------------------------------------------------- the tests
const rendered = renderKustomization(K8S);

function kubectl(): string | null {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore', timeout: 20_000 });
    return 'kubectl';
  } catch {
    return null;
  }
}

describe('k8s/ (kustomize render + Kubernetes schemas)', () => {
  it('renders every resource the kustomization lists, in the gmg namespace, with each image set once (gmg; gmg-sim for the simulator only)', () => {
    expect(rendered.length).toBeGreaterThan(20);
    const ids = rendered.map(idOf);
    expect(new Set(ids).size).toBe(ids.length);
    for (const o of rendered.filter((x) => !CLUSTER_SCOPED.has(x.kind))) expect({ id: idOf(o), ns: o.metadata.namespace }).toEqual({ id: idOf(o), ns: 'gmg' });
    const images = rendered
      .flatMap((o) =>
        ([...(o.spec?.template?.spec?.containers ?? []), ...(o.spec?.template?.spec?.initContainers ?? [])] as Obj[]).map((c) => ({
          workload: String(o.metadata?.name),
          image: c.image as string,
        })),
      )
      .filter(({ image }) => !image.startsWith('postgres') && !image.startsWith('redis') && !image.startsWith('edoburu/pgbouncer:'));
    expect(images.length).toBeGreaterThan(5);
    // The production image has no ffmpeg; only the simulator runs the `sim` target (Dockerfile).
    for (const { workload, image } of images) {
      expect({ workload, image }).toEqual({
        workload,
        image: workload === 'upstream-sim' ? 'registry.example.com/gmg-sim:0.1.0' : 'registry.example.com/gmg:0.1.0',
      });
    }
  });

  it('every manifest validates against its Kubernetes / KEDA / Prometheus-operator schema', () => {
    const kinds = new Set(rendered.map((o) => o.kind));
    for (const k of ['Deployment', 'Service', 'ConfigMap', 'Job', 'ScaledObject', 'TriggerAuthentication', 'PodDisruptionBudget']) expect(kinds).toContain(k);
    const failures = rendered.map((o) => ({ id: idOf(o), error: schemaErrors(o) })).filter((f) => f.error !== null);
    expect(failures).toEqual([]);
  });

  it('the validators catch what they promise (wrong type, missing required field, unknown kind)', () => {
    const deployment = structuredClone(rendered.find((o) => o.kind === 'Deployment')!);
    deployment.spec.template.spec.containers[0].ports = [{ containerPort: '8080' }];
    expect(schemaErrors(deployment)).toMatch(/containerPort must be integer/);
    const scaled = structuredClone(rendered.find((o) => o.kind === 'ScaledObject')!);
    delete scaled.spec.scaleTargetRef.name;
    expect(schemaErrors(scaled)).toMatch(/required property name/);
    expect(schemaErrors({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } })).toMatch(/no schema/);
    for (const kind of ['ServiceMonitor', 'PrometheusRule', 'PodMonitor']) expect(MODELS.has(`monitoring.coreos.com/v1 ${kind}`)).toBe(true);
    expect(
      schemaErrors({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', metadata: { name: 'r' }, spec: { groups: [{ rules: [] }] } }),
    ).toMatch(/required property name/);
  });

  it('the reader refuses kustomize features it does not render', () => {
    expect(() => renderKustomization(path.join(__dirname, 'fixtures', 'kustomize-with-patches'))).toThrow(/uses patches/);
    expect(() => renderKustomization(path.join(__dirname, 'fixtures', 'kustomize-hashed-generator'))).toThrow(/disableNameSuffixHash/);
  });

  it('the reader renders configMapGenerator without hash suffix (files, key=file, literals, labels)', () => {
    const objs = renderKustomization(path.join(__dirname, 'fixtures', 'kustomize-generator'));
    const cm = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'dashboards')!;
    expect(cm.metadata).toEqual({ name: 'dashboards', namespace: 'fixture', labels: { grafana_dashboard: '1', 'app.kubernetes.io/part-of': 'gmg' } });
    expect(Object.keys(cm.data).sort()).toEqual(['LEVEL', 'gmg.json', 'renamed.json']);
    expect(JSON.parse(cm.data['gmg.json'])).toEqual({ title: 'fixture <dashboard> & panels' });
    expect(schemaErrors(cm)).toBeNull();
  });

  const cli = kubectl();
  (cli ? it.each : it.skip.each)([
    ['k8s', K8S],
    ['the generator fixture', path.join(__dirname, 'fixtures', 'kustomize-generator')],
  ])('agrees with `kubectl kustomize` on %s object by object (only where kubectl is installed)', (_what, dir) => {
    const out = execFileSync(cli!, ['kustomize', dir], { encoding: 'utf8', timeout: 60_000, maxBuffer: 32 * 1024 * 1024 });
    const byId = (objs: Obj[]) => new Map(objs.map((o) => [idOf(o), o]));
    const theirs = byId(YAML.parseAllDocuments(out).map((d) => d.toJS() as Obj));
    const ours = byId(dir === K8S ? rendered : renderKustomization(dir));
    expect([...ours.keys()].sort()).toEqual([...theirs.keys()].sort());
    for (const [id, o] of ours) expect({ id, o }).toEqual({ id, o: theirs.get(id) });
  });
});
