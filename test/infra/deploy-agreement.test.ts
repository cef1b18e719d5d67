/**
 * docker-compose.yml, k8s/ (the base, k8s/base, and the simulator of the dev overlay) and the code must describe the same system: every service deployed everywhere, the same
 * environment variable names on both sides (and each one actually read by the code), probes on every Deployment,
 * and one scaler per worker pool reading its own BullMQ wait list.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import YAML from 'yaml';
import { QUEUES, type Pool } from '@gmg/contracts';
import { queueKeyPrefix } from '@gmg/queue';
import { POLL_RTT_SECONDS, pollPathTarget, poolCadenceSeconds } from '../../scripts/fleet/keda-targets';
import { LOCAL_SERVICES } from '../../scripts/lib/services';

const ROOT = path.resolve(__dirname, '../..');
const read = (rel: string): string => readFileSync(path.join(ROOT, rel), 'utf8');

type Obj = Record<string, any>;

const serviceDirs = readdirSync(path.join(ROOT, 'services'))
  .filter((d) => existsSync(path.join(ROOT, 'services', d, 'project.json')))
  .sort();
const workerPools = serviceDirs.filter((s) => s.startsWith('worker-'));

const compose = YAML.parse(read('docker-compose.yml'), { merge: true }) as Obj;
const k8sFiles = readdirSync(path.join(ROOT, 'k8s/base')).filter((f) => /\.ya?ml$/.test(f));
// The simulator is deployed by the dev overlay only (k8s/overlays/dev); the base and production never ship it.
const SIM_MANIFEST = 'k8s/overlays/dev/upstream-sim.yaml';
const k8sDocs: Obj[] = [...k8sFiles.filter((f) => f !== 'kustomization.yaml').map((f) => `k8s/base/${f}`), SIM_MANIFEST].flatMap((f) =>
  YAML.parseAllDocuments(read(f)).map((d) => ({ ...(d.toJS() as Obj), __file: f })),
);
const ofKind = (kind: string): Obj[] => k8sDocs.filter((d) => d.kind === kind);
const deployment = (name: string): Obj | undefined => ofKind('Deployment').find((d) => d.metadata.name === name);
const container = (d: Obj): Obj => d.spec.template.spec.containers[0];
const configMaps = new Map(ofKind('ConfigMap').map((c) => [c.metadata.name as string, c.data as Record<string, string>]));
const secretKeys = new Map(ofKind('Secret').map((s) => [s.metadata.name as string, Object.keys({ ...s.data, ...s.stringData })]));

/** Launcher variables, read by the image's CMD rather than by the service. */
const LAUNCHER_VARS = new Set(['SERVICE']);

function k8sEnvNames(d: Obj): string[] {
  const c = container(d);
  const explicit = (c.env ?? []).map((e: Obj) => e.name as string);
  const fromRefs = (c.envFrom ?? []).flatMap((f: Obj) => Object.keys(configMaps.get(f.configMapRef?.name) ?? {}));
  return [...new Set([...explicit, ...fromRefs])].sort();
}
const k8sEnvValue = (d: Obj, name: string): string | undefined => {
  const c = container(d);
  const e = (c.env ?? []).find((x: Obj) => x.name === name);
  if (e?.value !== undefined) return String(e.value);
  for (const f of c.envFrom ?? []) {
    const v = configMaps.get(f.configMapRef?.name)?.[name];
    if (v !== undefined) return v;
  }
  return undefined;
};
const composeEnvNames = (svc: string): string[] => Object.keys(compose.services[svc].environment ?? {}).sort();

function sourceText(dir: string): string {
  const abs = path.join(ROOT, dir);
  if (!existsSync(abs)) return '';
  return readdirSync(abs)
    .map((e) => {
      const rel = `${dir}/${e}`;
      if (statSync(path.join(ROOT, rel)).isDirectory()) return sourceText(rel);
      return /\.ts$/.test(e) && !/\.test\.ts$/.test(e) ? read(rel) : '';
    })
    .join('\n');
}
const libsSource = readdirSync(path.join(ROOT, 'libs'))
  .map((l) => sourceText(`libs/${l}/src`))
  .join('\n');

describe('deployment descriptions agree with each other and with the code', () => {
  it('finds the services, the compose file and the Kubernetes manifests', () => {
    expect(serviceDirs).toEqual(expect.arrayContaining(['api-edge', 'billing', 'upstream-sim', 'worker-image']));
    expect(ofKind('Deployment').length).toBeGreaterThan(0);
    expect(Object.keys(compose.services).length).toBeGreaterThan(0);
  });

  it.each(serviceDirs)('%s is in docker-compose, has a Kubernetes Deployment and is started by npm start', (svc) => {
    expect(compose.services[svc]).toBeDefined();
    // upstream-sim is deployed in k8s too (staging, demos, load tests): by the dev overlay only.
    expect(deployment(svc)).toBeDefined();
    expect(LOCAL_SERVICES.map((s) => s.name)).toContain(svc);
  });

  it('has no compose service or Deployment without a services/ folder (besides infrastructure)', () => {
    const infra = ['postgres', 'pgbouncer', 'redis', 'migrate'];
    const observability = Object.keys(compose.services).filter((s) => compose.services[s].profiles?.includes('observability'));
    expect(observability.sort()).toEqual(['grafana', 'prometheus']);
    expect(
      Object.keys(compose.services)
        .filter((s) => !infra.includes(s) && !observability.includes(s))
        .sort(),
    ).toEqual(serviceDirs);
    expect(
      ofKind('Deployment')
        .map((d) => d.metadata.name)
        .filter((n) => n !== 'gmg-pgbouncer')
        .sort(),
    ).toEqual(serviceDirs);
  });

  it.each(serviceDirs)('%s gets the same environment variable names in compose and in Kubernetes', (svc) => {
    expect(k8sEnvNames(deployment(svc)!)).toEqual(composeEnvNames(svc));
  });

  it.each(serviceDirs)('%s: every environment variable it is given is read by its code or a lib', (svc) => {
    const code = `${sourceText(`services/${svc}/src`)}\n${libsSource}`;
    const unread = composeEnvNames(svc).filter((n) => !LAUNCHER_VARS.has(n) && !new RegExp(`\\b${n}\\b`).test(code));
    expect(unread).toEqual([]);
  });

  it.each(serviceDirs)('%s listens on the same port in compose, Kubernetes and npm start', (svc) => {
    const local = LOCAL_SERVICES.find((s) => s.name === svc)!;
    const composePort = compose.services[svc].environment[local.portVar];
    const d = deployment(svc)!;
    expect(Number(composePort)).toBe(local.defaultPort);
    expect(Number(k8sEnvValue(d, local.portVar))).toBe(local.defaultPort);
    expect(container(d).ports.map((p: Obj) => p.containerPort)).toContain(local.defaultPort);
  });

  it.each(serviceDirs)('%s Deployment has startup, readiness and liveness HTTP probes on its own port, resources and a grace period', (svc) => {
    const d = deployment(svc)!;
    const c = container(d);
    const named = new Map<string, number>((c.ports ?? []).map((p: Obj) => [p.name, p.containerPort]));
    for (const probe of [c.startupProbe, c.readinessProbe, c.livenessProbe]) {
      expect(probe?.httpGet?.path).toMatch(/^\/(healthz|readyz)$/);
      const port = typeof probe.httpGet.port === 'string' ? named.get(probe.httpGet.port) : probe.httpGet.port;
      expect(port).toBe(LOCAL_SERVICES.find((s) => s.name === svc)!.defaultPort);
    }
    // Issue 38: the startup probe (liveness's path: the process answers) gates the other two, so neither needs an
    // initial delay; it allows a slow start (≥ 30 s) without holding a crash-looping pod for long (≤ 120 s).
    // Readiness waits longer than its checks do (2 s each, evaluateReadiness); liveness restarts after ≥ 30 s.
    const window = (p: Obj): number => (p.periodSeconds ?? 10) * (p.failureThreshold ?? 3);
    expect(c.startupProbe.httpGet.path).toBe('/healthz');
    expect(window(c.startupProbe)).toBeGreaterThanOrEqual(30);
    expect(window(c.startupProbe)).toBeLessThanOrEqual(120);
    expect([c.readinessProbe.initialDelaySeconds ?? 0, c.livenessProbe.initialDelaySeconds ?? 0]).toEqual([0, 0]);
    expect(c.readinessProbe.timeoutSeconds).toBeGreaterThan(2);
    expect(window(c.livenessProbe)).toBeGreaterThanOrEqual(30);
    expect(c.resources?.requests?.cpu).toBeDefined();
    expect(c.resources?.limits?.memory).toBeDefined();
    expect(d.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(30);
    // the simulator has its own image (Dockerfile target `sim`, the only one with ffmpeg)
    expect(c.image).toBe(svc === 'upstream-sim' ? 'gmg-sim:0.1.0' : 'gmg:0.1.0');
    expect(k8sEnvValue(d, 'SERVICE')).toBe(svc);
  });

  it.each(workerPools)('%s drains within its grace period (longer than one upstream call)', (svc) => {
    const d = deployment(svc)!;
    const upstreamMs = Number(k8sEnvValue(d, 'UPSTREAM_TIMEOUT_MS'));
    expect(upstreamMs).toBeGreaterThan(0);
    expect(d.spec.template.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(upstreamMs + 15_000);
  });

  const queueOf = (svc: string): string => (svc === 'billing' ? QUEUES.billing : QUEUES[svc.replace('worker-', '') as keyof typeof QUEUES]);

  it.each([...workerPools, 'billing'])('%s has its own KEDA ScaledObject on its own BullMQ wait list and never scales to zero', (svc) => {
    const prefix = configMaps.get('gmg-config')!.QUEUE_PREFIX;
    const scalers = ofKind('ScaledObject').filter((s) => s.spec.scaleTargetRef.name === svc);
    expect(scalers).toHaveLength(1);
    const [so] = scalers;
    const lists = so.spec.triggers.filter((t: Obj) => t.type === 'redis').map((t: Obj) => t.metadata.listName);
    expect(queueOf(svc)).toBeDefined();
    // the hash-tagged BullMQ prefix of the queue (shard 0 of a pool): libs/queue keys.ts
    const keysOf = (q: string): string => queueKeyPrefix(prefix, q, svc === 'billing' ? undefined : 0);
    expect(lists).toContain(`${keysOf(queueOf(svc))}:${queueOf(svc)}:wait`);
    // Every list it reads belongs to its own queue (billing also consumes the webhook queue: docs/webhooks.md).
    const own = svc === 'billing' ? [QUEUES.billing, QUEUES.webhook] : [queueOf(svc)];
    for (const l of lists) expect(own.some((q) => l.startsWith(`${keysOf(q)}:${q}:`))).toBe(true);
    // Delayed jobs are promoted only by a running worker: zero replicas would strand them.
    expect(so.spec.minReplicaCount).toBeGreaterThanOrEqual(1);
    for (const t of so.spec.triggers.filter((t: Obj) => t.type === 'redis')) expect(t.authenticationRef?.name).toBeDefined();
    // A pool also scales on the tasks on its poll path (a sorted set the redis trigger cannot read) and on its polls
    // overdue, as the edge exports them (libs/queue producers.ts jobCounts), and on its workers' poll lateness.
    const queries = so.spec.triggers.filter((t: Obj) => t.type === 'prometheus').map((t: Obj) => t.metadata.query);
    const pool = svc.replace('worker-', '');
    expect(queries).toEqual(
      svc === 'billing'
        ? []
        : [
            `max(gmg_queue_jobs{queue="${queueOf(svc)}",state="polling"})`,
            `max(gmg_queue_jobs{queue="${queueOf(svc)}",state="polls_overdue"})`,
            `(clamp_max(histogram_quantile(0.9, sum by (le) (rate(gmg_poll_lateness_seconds_bucket{pool="${pool}"}[2m]))), 30) > 0 or vector(0)) * count(gmg_poll_lateness_seconds_count{pool="${pool}"})`,
          ],
    );
  });

  const scaledObjectOf = (svc: string): Obj => ofKind('ScaledObject').find((s) => s.spec.scaleTargetRef.name === svc)!;
  const triggerOn = (so: Obj, query: RegExp): Obj => so.spec.triggers.find((t: Obj) => query.test(t.metadata.query ?? ''));

  it.each(workerPools)('%s: the poll-path threshold is ⌊0.7 × WORKER_CONCURRENCY × cadence ÷ upstream RTT⌋ of the values its Deployment sets', (svc) => {
    const pool = svc.replace('worker-', '') as Pool;
    const d = deployment(svc)!;
    const concurrency = Number(k8sEnvValue(d, 'WORKER_CONCURRENCY'));
    const scale = Number(k8sEnvValue(d, 'POLL_INTERVAL_SCALE'));
    expect(concurrency).toBeGreaterThan(0);
    expect(scale).toBeGreaterThan(0);
    const want = pollPathTarget({ concurrency, cadenceSeconds: poolCadenceSeconds(pool, scale), rttSeconds: POLL_RTT_SECONDS[pool] });
    const so = scaledObjectOf(svc);
    expect({ svc, threshold: Number(triggerOn(so, /state="polling"/).metadata.threshold) }).toEqual({ svc, threshold: want });
    // the submit lists and the overdue polls: one round of the replica's slots
    for (const t of so.spec.triggers.filter((t: Obj) => t.type === 'redis')) expect(Number(t.metadata.listLength)).toBe(concurrency);
    expect(Number(triggerOn(so, /state="polls_overdue"/).metadata.threshold)).toBe(concurrency);
    // the edge's counts: no series at all means no edge was scraped, which must read as a failure (then the
    // fallback), not as an empty poll path
    for (const state of ['polling', 'polls_overdue']) expect(triggerOn(so, new RegExp(`state="${state}"`)).metadata.ignoreNullValues).toBe('false');
    // the documented table quotes the same number (docs/operations.md, "Scaling a pool")
    expect(read('docs/operations.md')).toMatch(new RegExp(`\\| \`${svc}\`\\s*\\|[^\\n]*\\| \\*\\*${want}\\*\\*\\s*\\|`));
  });

  it.each(workerPools)('%s: a saturated pool scales on its p90 poll lateness × the replicas reporting it, at a 1 s target', (svc) => {
    const t = triggerOn(scaledObjectOf(svc), /gmg_poll_lateness_seconds_bucket/);
    expect(t.metadata.query).toContain(`{pool="${svc.replace('worker-', '')}"}`);
    // a seconds target below the alert's 2 s (GmgPollsLate), above the measured p99 at full load (23 ms)
    expect(Number(t.metadata.threshold)).toBeGreaterThan(0.1);
    expect(Number(t.metadata.threshold)).toBeLessThan(2);
    // AverageValue (the default): KEDA's fallback refuses a ScaledObject with a Value trigger
    expect(t.metricType ?? 'AverageValue').toBe('AverageValue');
  });

  it.each([...workerPools, 'billing'])('%s has a KEDA fallback: after a few failed reads it holds at least 2 replicas, within its bounds', (svc) => {
    const so = scaledObjectOf(svc);
    const fallback = so.spec.fallback as Obj | undefined;
    expect(fallback).toBeDefined();
    expect(fallback!.failureThreshold).toBeGreaterThanOrEqual(2);
    expect(fallback!.failureThreshold * so.spec.pollingInterval).toBeLessThanOrEqual(60);
    expect(fallback!.replicas).toBeGreaterThanOrEqual(Math.max(2, so.spec.minReplicaCount));
    expect(fallback!.replicas).toBeLessThanOrEqual(so.spec.maxReplicaCount);
    for (const t of so.spec.triggers) expect(t.metricType ?? 'AverageValue').toBe('AverageValue');
  });

  it('billing scales on each of its queues: settlements waiting and in flight, webhook deliveries waiting and in flight (at WEBHOOK_CONCURRENCY)', () => {
    const prefix = configMaps.get('gmg-config')!.QUEUE_PREFIX!;
    const so = scaledObjectOf('billing');
    const lists = Object.fromEntries(so.spec.triggers.map((t: Obj) => [t.metadata.listName, Number(t.metadata.listLength)]));
    const list = (q: string, l: string): string => `${queueKeyPrefix(prefix, q)}:${q}:${l}`;
    expect(Object.keys(lists).sort()).toEqual(
      [list(QUEUES.billing, 'wait'), list(QUEUES.billing, 'active'), list(QUEUES.webhook, 'wait'), list(QUEUES.webhook, 'active')].sort(),
    );
    expect(lists[list(QUEUES.webhook, 'active')]).toBe(Number(k8sEnvValue(deployment('billing')!, 'WEBHOOK_CONCURRENCY')));
  });

  it('no two scalers read the same queue', () => {
    const lists = ofKind('ScaledObject').flatMap((so) => so.spec.triggers.map((t: Obj) => t.metadata.listName ?? t.metadata.query));
    expect(new Set(lists).size).toBe(lists.length);
  });

  it('api-edge scales on CPU with an HPA and is exposed by a Service; upstream-sim has a Service', () => {
    const hpa = ofKind('HorizontalPodAutoscaler').find((h) => h.spec.scaleTargetRef.name === 'api-edge');
    expect(hpa?.spec.metrics.some((m: Obj) => m.resource?.name === 'cpu')).toBe(true);
    const selectors = ofKind('Service').map((s) => s.spec.selector['app.kubernetes.io/name']);
    expect(selectors).toEqual(expect.arrayContaining(['api-edge', 'upstream-sim']));
  });

  it('every autoscaled Deployment has a PodDisruptionBudget that still allows a drain', () => {
    for (const svc of serviceDirs.filter((s) => s !== 'upstream-sim')) {
      const pdb = ofKind('PodDisruptionBudget').find((p) => p.spec.selector.matchLabels['app.kubernetes.io/name'] === svc);
      expect({ svc, maxUnavailable: pdb?.spec.maxUnavailable }).toEqual({ svc, maxUnavailable: 1 });
    }
  });

  it('every secret and config key referenced by a Deployment or Job exists', () => {
    const refs = [...ofKind('Deployment'), ...ofKind('Job')].flatMap((d) => container(d).env ?? []);
    for (const e of refs) {
      const s = e.valueFrom?.secretKeyRef;
      if (s) expect({ env: e.name, found: secretKeys.get(s.name)?.includes(s.key) }).toEqual({ env: e.name, found: true });
      const c = e.valueFrom?.configMapKeyRef;
      if (c) expect({ env: e.name, found: configMaps.get(c.name)?.[c.key] !== undefined }).toEqual({ env: e.name, found: true });
    }
    const kedaAuth = ofKind('TriggerAuthentication').flatMap((t) => t.spec.secretTargetRef);
    for (const r of kedaAuth) expect(secretKeys.get(r.name)).toContain(r.key);
  });

  it('the migration Job and the compose one-shot run the migrate bundle (scripts/migrate.ts) against DATABASE_URL', () => {
    const job = ofKind('Job').find((j) => j.metadata.name === 'gmg-migrate')!;
    expect(container(job).command).toEqual(['node', 'dist/scripts/migrate.js']);
    expect(compose.services.migrate.command).toEqual(['node', 'dist/scripts/migrate.js']);
    // DEMO_* seed demo data on a local Docker host only; a cluster's migration Job never does.
    const composeEnv = Object.keys(compose.services.migrate.environment).filter((k) => !k.startsWith('DEMO_'));
    expect(
      container(job)
        .env.map((e: Obj) => e.name)
        .sort(),
    ).toEqual(composeEnv.sort());
    // the bundle's source, and scripts/build.mjs bundles it (test/infra/build.e2e.test.ts runs the bundle)
    expect(existsSync(path.join(ROOT, 'scripts/migrate.ts'))).toBe(true);
    expect(read('scripts/build.mjs')).toMatch(/^const SCRIPTS = \[[^\]]*'migrate'/m);
  });

  it('every gateway Deployment waits for its schema with the migrate bundle; nothing deployed runs tsx', () => {
    for (const svc of serviceDirs.filter((s) => s !== 'upstream-sim')) {
      const init = (deployment(svc)!.spec.template.spec.initContainers ?? []) as Obj[];
      expect({ svc, init: init.map((c) => [c.name, c.image, c.command]) }).toEqual({
        svc,
        init: [['wait-for-schema', 'gmg:0.1.0', ['node', 'dist/scripts/migrate.js', '--wait']]],
      });
    }
    // tsx and esbuild are development dependencies: the image has neither (Dockerfile, `deps` stage)
    const k8sCommands = k8sDocs.flatMap((d) => {
      const spec = d.spec?.template?.spec ?? {};
      return [...(spec.containers ?? []), ...(spec.initContainers ?? [])].map((c: Obj) => [c.command, c.args]);
    });
    const composeCommands = Object.values(compose.services as Record<string, Obj>).map((s) => [s.command, s.entrypoint]);
    expect(k8sCommands.length).toBeGreaterThan(serviceDirs.length);
    expect(JSON.stringify([...k8sCommands, ...composeCommands])).not.toMatch(/tsx|esbuild|\.ts\b/);
  });

  it('compose: every service is health-checked and waits for healthy Postgres/Redis and a finished migration', () => {
    for (const svc of serviceDirs) {
      const s = compose.services[svc];
      expect({ svc, healthcheck: Boolean(s.healthcheck?.test) }).toEqual({ svc, healthcheck: true });
      if (svc === 'upstream-sim') continue;
      expect({ svc, deps: s.depends_on }).toEqual({
        svc,
        deps: {
          postgres: { condition: 'service_healthy' },
          pgbouncer: { condition: 'service_healthy' },
          redis: { condition: 'service_healthy' },
          migrate: { condition: 'service_completed_successfully' },
        },
      });
    }
  });

  it('compose Redis runs infra/redis.conf, which keeps queue keys (noeviction) and persists them (AOF)', () => {
    const redis = compose.services.redis;
    expect(redis.image).toMatch(/^redis:7/);
    expect(redis.volumes.join(' ')).toContain('./infra/redis.conf:');
    const conf = read('infra/redis.conf');
    expect(conf).toMatch(/^maxmemory-policy noeviction$/m);
    expect(conf).toMatch(/^appendonly yes$/m);
    expect(compose.services.postgres.image).toMatch(/^postgres:16/);
  });

  it('api-edge keeps uploads on a mounted volume (the root filesystem is read-only), shared across replicas in k8s', () => {
    const d = deployment('api-edge')!;
    const dir = k8sEnvValue(d, 'UPLOAD_DIR')!;
    const mount = container(d).volumeMounts.find((m: Obj) => dir === m.mountPath || dir.startsWith(`${m.mountPath}/`));
    const volume = d.spec.template.spec.volumes.find((v: Obj) => v.name === mount?.name);
    const claim = ofKind('PersistentVolumeClaim').find((c) => c.metadata.name === volume?.persistentVolumeClaim?.claimName);
    expect(claim?.spec.accessModes).toContain('ReadWriteMany');
    const composeDir = compose.services['api-edge'].environment.UPLOAD_DIR as string;
    expect(compose.services['api-edge'].volumes.some((v: string) => composeDir.startsWith(v.split(':')[1]))).toBe(true);
  });

  it('the base kustomization lists every manifest in k8s/base; the simulator is in the dev overlay only', () => {
    const kust = YAML.parse(read('k8s/base/kustomization.yaml')) as Obj;
    // secret.example.yaml documents the Secret's keys; it is never applied (no placeholder secret in a cluster).
    expect([...kust.resources].sort()).toEqual(k8sFiles.filter((f) => f !== 'kustomization.yaml' && !f.endsWith('.example.yaml')).sort());
    expect(YAML.parse(read('k8s/overlays/dev/kustomization.yaml')).resources).toEqual(['../../base', path.basename(SIM_MANIFEST)]);
    expect(YAML.parse(read('k8s/overlays/production/kustomization.yaml')).resources).not.toContain(path.basename(SIM_MANIFEST));
  });

  describe('monitoring (issue 12): what Prometheus scrapes and what the alerts and the dashboard read', () => {
    const gatewayServices = serviceDirs.filter((s) => s !== 'upstream-sim');
    const monitoringDocs: Obj[] = ['service-monitors.yaml', 'pod-monitors.yaml', 'prometheus-rules.yaml']
      .flatMap((f) => YAML.parseAllDocuments(read(`k8s/base/monitoring/${f}`)).map((d) => d.toJS() as Obj))
      .filter((d) => d && d.kind);
    const dashboard = JSON.parse(read('k8s/base/monitoring/gmg-dashboard.json')) as Obj;
    const rules = monitoringDocs.filter((d) => d.kind === 'PrometheusRule').flatMap((r) => r.spec.groups.flatMap((g: Obj) => g.rules as Obj[]));
    const exprs = [...rules.map((r) => r.expr as string), ...dashboard.panels.flatMap((p: Obj) => p.targets.map((t: Obj) => t.expr as string))];
    const metricsSource = sourceText('libs/observability/src');

    it('the kustomization includes the monitoring component: a ServiceMonitor for the edge (through its Service), a PodMonitor per consumer, each on its metrics port', () => {
      const kust = YAML.parse(read('k8s/base/kustomization.yaml')) as Obj;
      expect(kust.components).toContain('monitoring');
      expect(YAML.parse(read('k8s/base/monitoring/kustomization.yaml')).kind).toBe('Component');
      const nameOf = (m: Obj): string => m.spec.selector.matchLabels['app.kubernetes.io/name'] as string;
      const serviceMonitors = monitoringDocs.filter((d) => d.kind === 'ServiceMonitor');
      const podMonitors = monitoringDocs.filter((d) => d.kind === 'PodMonitor');
      expect([...serviceMonitors, ...podMonitors].map(nameOf).sort()).toEqual(gatewayServices);
      expect(serviceMonitors.map(nameOf)).toEqual(['api-edge']);
      // the ServiceMonitor reaches the pods through the edge's Service: it must select that Service and name its port
      const [edgeEndpoint] = serviceMonitors[0]!.spec.endpoints;
      const edgeService = k8sDocs.find((d) => d.kind === 'Service' && d.metadata.name === 'api-edge')!;
      expect(edgeService.metadata.labels['app.kubernetes.io/name']).toBe('api-edge');
      const servicePort = (edgeService.spec.ports as Obj[]).find((p) => p.name === edgeEndpoint.port)!;
      expect(servicePort).toBeDefined();
      const edgeContainerPort = container(deployment('api-edge')!).ports.find((p: Obj) => p.name === servicePort.targetPort);
      expect(edgeContainerPort?.containerPort).toBe(LOCAL_SERVICES.find((s) => s.name === 'api-edge')!.defaultPort);
      expect(edgeEndpoint.path).toBe('/metrics');
      // the edge's /metrics wants the admin token; the consumers' health ports are internal
      expect(edgeEndpoint.authorization.credentials).toEqual({ name: 'gmg-secrets', key: 'ADMIN_TOKEN' });
      for (const m of podMonitors) {
        const svc = nameOf(m);
        const [ep] = m.spec.podMetricsEndpoints;
        expect(ep.path).toBe('/metrics');
        const port = container(deployment(svc)!).ports.find((p: Obj) => p.name === ep.port);
        expect({ svc, port: port?.containerPort }).toEqual({ svc, port: LOCAL_SERVICES.find((s) => s.name === svc)!.defaultPort });
      }
    });

    it('alerts cover the unsettled backlog, queue wait age, open breakers, the 5xx ratio and a stopped sweeper', () => {
      const alertExprs = rules.map((r) => r.expr as string).join('\n');
      for (const m of [
        'gmg_unsettled_oldest_age_seconds',
        'gmg_queue_oldest_waiting_seconds',
        'gmg_circuit_breaker_state',
        'gmg_http_requests_total{status=~"5.."}',
        'gmg_sweeper_last_run_timestamp_seconds',
      ]) {
        expect(alertExprs).toContain(m);
      }
      for (const r of rules) expect(read('docs/operations.md')).toContain(`### ${r.alert}`);
    });

    it('every gmg_ metric an alert or a dashboard panel reads is one the code defines', () => {
      const used = new Set(exprs.flatMap((e) => e.match(/\bgmg_[a-z_]+/g) ?? []).map((n) => n.replace(/_(bucket|count|sum)$/, '')));
      expect(used.size).toBeGreaterThan(10);
      const undefinedNames = [...used].filter((n) => !metricsSource.includes(`'${n}'`));
      expect(undefinedNames).toEqual([]);
    });

    it('compose --profile observability: Prometheus scrapes every gateway service, Grafana loads the same dashboard file', () => {
      const prom = YAML.parse(read('infra/prometheus/prometheus.yml')) as Obj;
      const targets = prom.scrape_configs.flatMap((c: Obj) => c.static_configs.flatMap((sc: Obj) => sc.targets as string[]));
      const expected = gatewayServices.map((svc) => {
        const local = LOCAL_SERVICES.find((s) => s.name === svc)!;
        return `${svc}:${compose.services[svc].environment[local.portVar]}`;
      });
      expect([...targets].sort()).toEqual(expected.sort());
      expect(prom.scrape_configs.find((c: Obj) => c.job_name === 'api-edge').authorization.credentials_file).toBe(
        compose.services.prometheus.configs[0].target,
      );
      expect(compose.configs.admin_token.content).toContain('ADMIN_TOKEN');
      const mounts = (compose.services.grafana.volumes as string[]).map((v) => v.split(':')[0]);
      expect(mounts).toContain('./k8s/base/monitoring/gmg-dashboard.json');
      expect(mounts).toContain('./infra/grafana/provisioning');
      for (const m of mounts.filter((v) => v.startsWith('./'))) expect(existsSync(path.join(ROOT, m))).toBe(true);
    });

    it('compose Prometheus loads the same alert rules as the PrometheusRule (infra/prometheus/alerts.yml)', () => {
      const prom = YAML.parse(read('infra/prometheus/prometheus.yml')) as Obj;
      const mounts = new Map((compose.services.prometheus.volumes as string[]).map((v) => [v.split(':')[1], v.split(':')[0]] as const));
      expect(prom.rule_files).toHaveLength(1);
      const file = mounts.get(prom.rule_files[0]);
      expect(file).toBe('./infra/prometheus/alerts.yml');
      const composeRules = YAML.parse(read(file!)) as Obj;
      const operatorRule = YAML.parseAllDocuments(read('k8s/base/monitoring/prometheus-rules.yaml'))
        .map((d) => d.toJS() as Obj)
        .find((d) => d.kind === 'PrometheusRule')!;
      expect(composeRules).toEqual({ groups: operatorRule.spec.groups });
    });
  });
});
