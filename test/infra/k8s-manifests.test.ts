/**
 * `kubectl kustomize` of the base (k8s/base) and of both overlays (k8s/overlays/dev, k8s/overlays/production) renders,
 * and every rendered manifest validates against the Kubernetes schemas, offline.
 *
 * Rendering: test/infra/kustomize-reader.ts, a small reader of exactly the kustomize features k8s/ uses, which
 * refuses any other. Where kubectl is installed, its render is compared with the reader's, object by object.
 *
 * Validation: the JSON schemas of Kubernetes 1.x (kubernetes-models), of KEDA (@kubernetes-models/keda) and of the
 * Prometheus operator (@kubernetes-models/prometheus-operator: ServiceMonitor, PrometheusRule, PodMonitor) ship in
 * npm packages and run in-process. A kind with no schema fails the test: add its model package to the reader.
 * Limit (as with the API server's schemas): unknown nested fields are not reported, since the Kubernetes OpenAPI
 * schemas do not forbid additional properties; types, enums, required fields and formats are checked.
 * What the production overlay must contain (seccomp, spread, NetworkPolicies, shards, alerts): k8s-production.test.ts.
 */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import YAML from 'yaml';
import { applyJson6902, CLUSTER_SCOPED, BASE, idOf, K8S, MODELS, renderKustomization, schemaErrors, type Obj } from './kustomize-reader';

// ---------------------------------------------------------------- the tests
const DEV = path.join(K8S, 'overlays', 'dev');
const PRODUCTION = path.join(K8S, 'overlays', 'production');
const renders: [string, string, Obj[]][] = [
  ['the base (k8s/base)', BASE, renderKustomization(BASE)],
  ['the dev overlay', DEV, renderKustomization(DEV)],
  ['the production overlay', PRODUCTION, renderKustomization(PRODUCTION)],
];
const rendered = renders[0]![2];

function kubectl(): string | null {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore', timeout: 20_000 });
    return 'kubectl';
  } catch {
    return null;
  }
}

/** Third-party images pinned in the manifests themselves (no `images` rule applies to them). */
const THIRD_PARTY = ['postgres', 'redis', 'edoburu/pgbouncer:', 'prometheuscommunity/pgbouncer-exporter:'];

describe('k8s/ (kustomize render + Kubernetes schemas)', () => {
  it.each(renders)('%s renders once per object, in the gmg namespace, each image set once (gmg; gmg-sim for the simulator only)', (what, _dir, objs) => {
    expect(objs.length).toBeGreaterThan(20);
    const ids = objs.map(idOf);
    expect(new Set(ids).size).toBe(ids.length);
    for (const o of objs.filter((x) => !CLUSTER_SCOPED.has(x.kind))) expect({ id: idOf(o), ns: o.metadata.namespace }).toEqual({ id: idOf(o), ns: 'gmg' });
    const images = objs
      .flatMap((o) =>
        ([...(o.spec?.template?.spec?.containers ?? []), ...(o.spec?.template?.spec?.initContainers ?? [])] as Obj[]).map((c) => ({
          workload: String(o.metadata?.name),
          image: c.image as string,
        })),
      )
      .filter(({ image }) => !THIRD_PARTY.some((p) => image.startsWith(p)));
    expect(images.length).toBeGreaterThan(5);
    // The production image has no ffmpeg; only the simulator runs the `sim` target (Dockerfile), and only dev has it.
    for (const { workload, image } of images) {
      expect({ workload, image }).toEqual({
        workload,
        image: workload === 'upstream-sim' ? 'registry.example.com/gmg-sim:0.1.0' : 'registry.example.com/gmg:0.1.0',
      });
    }
    expect(images.some((i) => i.workload === 'upstream-sim')).toBe(what === 'the dev overlay');
  });

  it.each(renders)('every manifest of %s validates against its Kubernetes / KEDA / Prometheus-operator schema', (_what, _dir, objs) => {
    const kinds = new Set(objs.map((o) => o.kind));
    for (const k of ['Deployment', 'Service', 'ConfigMap', 'Job', 'ScaledObject', 'TriggerAuthentication', 'PodDisruptionBudget', 'PrometheusRule'])
      expect(kinds).toContain(k);
    const failures = objs.map((o) => ({ id: idOf(o), error: schemaErrors(o) })).filter((f) => f.error !== null);
    expect(failures).toEqual([]);
  });

  it('the validators catch what they promise (wrong type, missing required field, unknown kind, a bad NetworkPolicy)', () => {
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
    const policy = structuredClone(renders[2]![2].find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'billing')!);
    delete policy.spec.podSelector;
    expect(schemaErrors(policy)).toMatch(/required property podSelector/);
  });

  it('the reader refuses kustomize features it does not render', () => {
    expect(() => renderKustomization(path.join(__dirname, 'fixtures', 'kustomize-with-patches'))).toThrow(/strategic-merge patch/);
    expect(() => renderKustomization(path.join(__dirname, 'fixtures', 'kustomize-hashed-generator'))).toThrow(/disableNameSuffixHash/);
  });

  it('the reader applies JSON 6902 patches as kustomize does: add (append, insert), replace, remove, and a failing test op stops the build', () => {
    const doc: Obj = { spec: { list: [{ a: 1 }, { a: 2 }], map: { 'x/y': 1, keep: true } } };
    applyJson6902(doc, [
      { op: 'test', path: '/spec/list/0/a', value: 1 },
      { op: 'replace', path: '/spec/list/0', value: { a: 10 } },
      { op: 'add', path: '/spec/list/-', value: { a: 3 } },
      { op: 'add', path: '/spec/list/1', value: { a: 1.5 } },
      { op: 'remove', path: '/spec/map/x~1y' },
      { op: 'add', path: '/spec/map/new', value: 'v' },
    ]);
    expect(doc).toEqual({ spec: { list: [{ a: 10 }, { a: 1.5 }, { a: 2 }, { a: 3 }], map: { keep: true, new: 'v' } } });
    expect(() => applyJson6902(doc, [{ op: 'test', path: '/spec/list/0/a', value: 1 }])).toThrow(/test \/spec\/list\/0\/a failed/);
    expect(() => applyJson6902(doc, [{ op: 'replace', path: '/spec/missing/x', value: 1 }])).toThrow(/does not exist/);
    expect(() => applyJson6902(doc, [{ op: 'replace', path: '/spec/map/absent', value: 1 }])).toThrow(/nothing there/);
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
    ...renders.map(([what, dir]) => [what, dir] as [string, string]),
    ['the generator fixture', path.join(__dirname, 'fixtures', 'kustomize-generator')],
  ])('agrees with `kubectl kustomize` on %s object by object (only where kubectl is installed)', (_what, dir) => {
    const out = execFileSync(cli!, ['kustomize', dir], { encoding: 'utf8', timeout: 60_000, maxBuffer: 32 * 1024 * 1024 });
    const byId = (objs: Obj[]) => new Map(objs.map((o) => [idOf(o), o]));
    const theirs = byId(YAML.parseAllDocuments(out).map((d) => d.toJS() as Obj));
    const ours = byId(renderKustomization(dir));
    expect([...ours.keys()].sort()).toEqual([...theirs.keys()].sort());
    for (const [id, o] of ours) expect({ id, o }).toEqual({ id, o: theirs.get(id) });
  });
});
