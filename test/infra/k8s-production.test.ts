/**
 * What the production overlay (k8s/overlays/production) must hold, read from its render (test/infra/kustomize-reader.ts,
 * the same render k8s-manifests.test.ts validates against the schemas and compares with kubectl): hardened pods,
 * spread, a NetworkPolicy for every pod with billing's egress kept off the cluster, every shard's queue watched by
 * KEDA on a TLS Redis Cluster, PgBouncer's console apart from the application, and an alert with a runbook per signal.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { QUEUES } from '@gmg/contracts';
import { billingQueueKeyPrefix, queueKeyPrefix } from '@gmg/queue';
import { BASE, K8S, ROOT, renderKustomization, type Obj } from './kustomize-reader';

const production = renderKustomization(path.join(K8S, 'overlays', 'production'));
const base = renderKustomization(BASE);
const ofKind = (objs: Obj[], kind: string): Obj[] => objs.filter((o) => o.kind === kind);
const named = (objs: Obj[], kind: string, name: string): Obj => objs.find((o) => o.kind === kind && o.metadata.name === name)!;
const workloads = [...ofKind(production, 'Deployment'), ...ofKind(production, 'Job')];
const podLabels = (w: Obj): Record<string, string> => w.spec.template.metadata.labels;
const POOLS = ['image', 'video', 'artgen', 'avatar'] as const;

/** A LabelSelector (matchLabels, matchExpressions In/NotIn/Exists) against a pod's labels; {} selects every pod. */
function selects(selector: Obj, labels: Record<string, string>): boolean {
  const byLabel = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpr = ((selector.matchExpressions ?? []) as Obj[]).every((e) =>
    e.operator === 'In'
      ? e.values.includes(labels[e.key])
      : e.operator === 'NotIn'
        ? !e.values.includes(labels[e.key])
        : e.operator === 'Exists'
          ? e.key in labels
          : false,
  );
  return byLabel && byExpr;
}

const ipv4 = (ip: string): number => ip.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
const range = (cidr: string): [number, number] => {
  const [ip, bits] = cidr.split('/');
  const size = 2 ** (32 - Number(bits));
  const start = Math.floor(ipv4(ip!) / size) * size;
  return [start, start + size - 1];
};
/** Whether `inner` lies inside `outer` (IPv4 CIDRs). */
const within = (inner: string, outer: string): boolean => range(outer)[0] <= range(inner)[0] && range(inner)[1] <= range(outer)[1];

/** Pod and service networks of common clusters (kubeadm/flannel, Calico, GKE, EKS VPC CNI, k3s) and the metadata endpoint. */
const CLUSTER_CIDRS = [
  '10.244.0.0/16',
  '10.96.0.0/12',
  '192.168.0.0/16',
  '10.42.0.0/16',
  '10.43.0.0/16',
  '172.20.0.0/16',
  '100.64.0.0/10',
  '169.254.169.254/32',
];

describe('k8s/overlays/production', () => {
  it('has the gateway and no simulator: nothing references upstream-sim or its image', () => {
    expect(workloads.map((w) => w.metadata.name).sort()).toEqual(
      ['api-edge', 'billing', 'gmg-migrate', 'gmg-pgbouncer', ...POOLS.map((p) => `worker-${p}`)].sort(),
    );
    expect(JSON.stringify(production)).not.toMatch(/upstream-sim|gmg-sim|SIM_/);
  });

  it.each(workloads.map((w) => [w.metadata.name, w]))(
    '%s: seccomp RuntimeDefault, non-root, no service account token; every container read-only, no escalation',
    (_n, w) => {
      const spec = w.spec.template.spec;
      expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect(spec.automountServiceAccountToken).toBe(false);
      for (const c of [...spec.containers, ...(spec.initContainers ?? [])] as Obj[]) {
        expect({ c: c.name, sc: c.securityContext }).toEqual({
          c: c.name,
          sc: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
        });
      }
    },
  );

  it.each(ofKind(production, 'Deployment').map((d) => [d.metadata.name, d]))(
    '%s spreads over zones and nodes, selecting its own pods, and has a PodDisruptionBudget',
    (name, d) => {
      const spread = d.spec.template.spec.topologySpreadConstraints as Obj[];
      expect(spread.map((s) => s.topologyKey).sort()).toEqual(['kubernetes.io/hostname', 'topology.kubernetes.io/zone']);
      for (const s of spread) expect(selects(s.labelSelector, podLabels(d))).toBe(true);
      const hostname = spread.find((s) => s.topologyKey === 'kubernetes.io/hostname')!;
      expect(hostname.whenUnsatisfiable).toBe(['api-edge', 'gmg-pgbouncer'].includes(name) ? 'DoNotSchedule' : 'ScheduleAnyway');
      const pdbs = ofKind(production, 'PodDisruptionBudget').filter((p) => selects(p.spec.selector, podLabels(d)));
      expect(pdbs).toHaveLength(1);
    },
  );

  describe('NetworkPolicies', () => {
    const policies = ofKind(production, 'NetworkPolicy');
    const forPod = (w: Obj): Obj[] => policies.filter((p) => Object.keys(p.spec.podSelector).length > 0 && selects(p.spec.podSelector, podLabels(w)));

    it('deny everything by default, then each pod is selected by its own policy governing both directions', () => {
      const deny = named(production, 'NetworkPolicy', 'default-deny');
      expect(deny.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
      for (const w of workloads) {
        const own = forPod(w);
        expect({ pod: w.metadata.name, own: own.length }).toEqual({ pod: w.metadata.name, own: 1 });
        expect(own[0]!.spec.policyTypes).toEqual(['Ingress', 'Egress']);
      }
    });

    it('billing, the workers and the edge reach the internet only outside the cluster: private, shared and link-local ranges excepted', () => {
      for (const name of ['billing', 'api-edge', ...POOLS.map((p) => `worker-${p}`)]) {
        const egress = forPod(named(production, 'Deployment', name))[0]!.spec.egress as Obj[];
        const wide = egress.filter((r) => r.to.some((peer: Obj) => peer.ipBlock?.cidr === '0.0.0.0/0'));
        expect({ name, wide: wide.length }).toEqual({ name, wide: 1 });
        const [rule] = wide;
        // no pod or namespace selector beside the outside block, and HTTPS only (callback URLs are https: docs/webhooks.md)
        expect(rule!.to).toHaveLength(1);
        expect(rule!.ports).toEqual([{ protocol: 'TCP', port: 443 }]);
        const except = rule!.to[0].ipBlock.except as string[];
        for (const cidr of CLUSTER_CIDRS) expect({ name, cidr, excluded: except.some((e) => within(cidr, e)) }).toEqual({ name, cidr, excluded: true });
      }
    });

    it('billing reaches in the cluster only PgBouncer (and DNS through allow-dns); PgBouncer takes clients from the gateway only and reaches Postgres', () => {
      const billing = forPod(named(production, 'Deployment', 'billing'))[0]!;
      const inCluster = (billing.spec.egress as Obj[]).flatMap((r) => r.to).filter((peer: Obj) => peer.podSelector || peer.namespaceSelector);
      expect(inCluster).toEqual([{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'gmg-pgbouncer' } } }]);
      const dns = named(production, 'NetworkPolicy', 'allow-dns');
      expect(dns.spec.egress[0].ports.map((p: Obj) => p.port)).toEqual([53, 53]);
      const pgbouncer = named(production, 'NetworkPolicy', 'gmg-pgbouncer');
      const clients = pgbouncer.spec.ingress[0].from[0].podSelector;
      for (const w of workloads) {
        const isClient = ['api-edge', 'billing', ...POOLS.map((p) => `worker-${p}`)].includes(w.metadata.name);
        expect({ pod: w.metadata.name, client: selects(clients, podLabels(w)) }).toEqual({ pod: w.metadata.name, client: isClient });
      }
      expect(pgbouncer.spec.egress).toEqual([{ to: [{ ipBlock: { cidr: '10.100.0.0/16' } }], ports: [{ protocol: 'TCP', port: 5432 }] }]);
    });

    it('Prometheus may scrape every port a PodMonitor or ServiceMonitor names', () => {
      const monitors = [...ofKind(production, 'PodMonitor'), ...ofKind(production, 'ServiceMonitor')];
      for (const m of monitors) {
        const target = workloads.find((w) => selects(m.spec.selector, podLabels(w)))!;
        const ports = [...(m.spec.podMetricsEndpoints ?? []), ...(m.spec.endpoints ?? [])].map((e: Obj) => e.port as string);
        const fromMonitoring = (forPod(target)[0]!.spec.ingress as Obj[]).filter((r) =>
          r.from.some((peer: Obj) => peer.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] === 'monitoring'),
        );
        for (const port of ports) {
          expect({ monitor: m.metadata.name, port, open: fromMonitoring.some((r) => r.ports.some((p: Obj) => p.port === port)) }).toEqual({
            monitor: m.metadata.name,
            port,
            open: true,
          });
        }
      }
    });
  });

  describe('Redis: a Cluster over TLS, every pool and billing’s two queues in K ≥ 2 shards, KEDA watching every shard', () => {
    const config = named(production, 'ConfigMap', 'gmg-config').data as Record<string, string>;
    const shards = Object.fromEntries(config.QUEUE_SHARDS!.split(',').map((kv) => kv.split('=') as [string, string]));
    const redisTriggers = (so: Obj): Obj[] => (so.spec.triggers as Obj[]).filter((t) => t.type.startsWith('redis'));

    it('QUEUE_SHARDS gives every pool at least 2 shards; REDIS_CLUSTER_NODES lists the nodes (env keys the services read: libs/config redis.ts)', () => {
      for (const p of POOLS) expect(Number(shards[p])).toBeGreaterThanOrEqual(2);
      expect(config.REDIS_CLUSTER_NODES).toMatch(/^[\w.-]+:\d+(,[\w.-]+:\d+)+$/);
      const configSource =
        readFileSync(path.join(ROOT, 'libs/config/src/redis.ts'), 'utf8') + readFileSync(path.join(ROOT, 'libs/config/src/index.ts'), 'utf8');
      for (const key of Object.keys(config)) expect({ key, read: configSource.includes(key) || key === 'LOG_LEVEL' }).toEqual({ key, read: true });
    });

    it.each(POOLS)('worker-%s: one redis-cluster trigger per shard wait and active list, each at the base target ÷ K; the poll-path trigger kept', (pool) => {
      const queue = QUEUES[pool];
      const k = Number(shards[pool]);
      const so = named(production, 'ScaledObject', `worker-${pool}`);
      const lists = redisTriggers(so).map((t) => t.metadata.listName as string);
      const expected = Array.from({ length: k }, (_, s) =>
        ['wait', 'active'].map((l) => `${queueKeyPrefix(config.QUEUE_PREFIX!, queue, s)}:${queue}:${l}`),
      ).flat();
      expect(lists.sort()).toEqual(expected.sort());
      const baseLength = Number(redisTriggers(named(base, 'ScaledObject', `worker-${pool}`))[0]!.metadata.listLength);
      for (const t of redisTriggers(so)) expect(Number(t.metadata.listLength) * k).toBe(baseLength);
      expect((so.spec.triggers as Obj[]).filter((t) => t.type === 'prometheus')).toEqual(
        (named(base, 'ScaledObject', `worker-${pool}`).spec.triggers as Obj[]).filter((t) => t.type === 'prometheus'),
      );
    });

    it('billing: one redis-cluster trigger per shard of each of its queues (settlements, webhook deliveries; wait and active), each at the base target ÷ K', () => {
      const so = named(production, 'ScaledObject', 'billing');
      const baseLengths = Object.fromEntries(
        redisTriggers(named(base, 'ScaledObject', 'billing')).map((t) => [t.metadata.listName as string, Number(t.metadata.listLength)]),
      );
      const expected: Record<string, number> = {};
      for (const q of ['billing', 'webhook'] as const) {
        const k = Number(shards[q]);
        expect(k).toBeGreaterThanOrEqual(2);
        for (const l of ['wait', 'active']) {
          const baseLength = baseLengths[`${billingQueueKeyPrefix(config.QUEUE_PREFIX!, QUEUES[q])}:${QUEUES[q]}:${l}`]!;
          expect(baseLength).toBeGreaterThan(0);
          for (let s = 0; s < k; s++) expected[`${billingQueueKeyPrefix(config.QUEUE_PREFIX!, QUEUES[q], s)}:${QUEUES[q]}:${l}`] = baseLength / k;
        }
      }
      expect(Object.fromEntries(redisTriggers(so).map((t) => [t.metadata.listName as string, Number(t.metadata.listLength)]))).toEqual(expected);
    });

    it('every ScaledObject keeps its fallback replicas and reads the same Prometheus queries as the base', () => {
      const scaled = ofKind(production, 'ScaledObject');
      expect(scaled.map((so) => so.metadata.name).sort()).toEqual(['billing', ...POOLS.map((p) => `worker-${p}`)].sort());
      for (const so of scaled) {
        const fallback = so.spec.fallback as Obj | undefined;
        expect({ so: so.metadata.name, fallback: fallback && fallback.replicas >= 2 && fallback.failureThreshold >= 2 }).toEqual({
          so: so.metadata.name,
          fallback: true,
        });
        expect(so.spec.fallback).toEqual(named(base, 'ScaledObject', so.metadata.name).spec.fallback);
      }
    });

    it('every Redis trigger reads the cluster over TLS, at the nodes the services use, authenticated as the ACL user and password', () => {
      const triggers = ofKind(production, 'ScaledObject').flatMap(redisTriggers);
      expect(triggers.length).toBeGreaterThan(POOLS.length * 4);
      for (const t of triggers) {
        expect({ list: t.metadata.listName, type: t.type, tls: t.metadata.enableTLS, addresses: t.metadata.addresses, auth: t.authenticationRef }).toEqual({
          list: t.metadata.listName,
          type: 'redis-cluster',
          tls: 'true',
          addresses: config.REDIS_CLUSTER_NODES,
          auth: { name: 'gmg-keda-redis' },
        });
      }
      const auth = named(production, 'TriggerAuthentication', 'gmg-keda-redis');
      expect(auth.spec.secretTargetRef.map((r: Obj) => r.parameter).sort()).toEqual(['password', 'username']);
    });
  });

  it("PgBouncer's console users are not the application's; its exporter reads the console as the stats user", () => {
    const ini = readFileSync(path.join(BASE, 'pgbouncer/pgbouncer.ini'), 'utf8');
    const appUser = new URL(/DATABASE_URL: (\S+)/.exec(readFileSync(path.join(BASE, 'secret.example.yaml'), 'utf8'))![1]!).username;
    const admins = /^admin_users = (.*)$/m.exec(ini)![1]!.split(/,\s*/);
    const stats = /^stats_users = (.*)$/m.exec(ini)![1]!.split(/,\s*/);
    expect(appUser).toBe('gmg');
    expect(admins).not.toContain(appUser);
    expect(stats).not.toContain(appUser);
    const exporter = (named(production, 'Deployment', 'gmg-pgbouncer').spec.template.spec.containers as Obj[]).find((c) => c.name === 'pgbouncer-exporter')!;
    expect(exporter.env).toEqual([{ name: 'PGBOUNCER_STATS_URL', valueFrom: { secretKeyRef: { name: 'gmg-pgbouncer', key: 'stats_url' } } }]);
    const statsUrl = /stats_url: (\S+)/.exec(readFileSync(path.join(BASE, 'secret.example.yaml'), 'utf8'))![1]!;
    expect(stats).toContain(new URL(statsUrl).username);
  });

  describe('alerts', () => {
    const rules = ofKind(production, 'PrometheusRule').flatMap((r) => (r.spec.groups as Obj[]).flatMap((g) => g.rules as Obj[]));
    const operations = readFileSync(path.join(ROOT, 'docs/operations.md'), 'utf8');
    /** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes. */
    const anchors = new Set(
      [...operations.matchAll(/^#+ (.+)$/gm)].map((m) =>
        m[1]!
          .toLowerCase()
          .replace(/[^\w\s-]/g, '')
          .replace(/\s/g, '-'),
      ),
    );

    it.each([
      ['Redis memory', 'redis_memory_used_bytes'],
      ['PgBouncer client waits', 'pgbouncer_pools_client_waiting_connections'],
      ['Postgres replication lag', 'pg_replication_lag_seconds'],
      ['KEDA scaler errors', 'keda_scaler_detail_errors_total'],
      ['an autoscaler at its maxReplicaCount', 'kube_horizontalpodautoscaler_spec_max_replicas'],
      ['poll lateness', 'gmg_poll_lateness_seconds'],
      ['billing lag (the unsettled backlog, libs/observability scrape-gauges.ts)', 'gmg_unsettled_oldest_age_seconds'],
    ])('an alert watches %s (%s)', (_signal, metric) => {
      expect(rules.filter((r) => String(r.expr).includes(metric)).map((r) => r.alert)).toHaveLength(1);
    });

    it('every alert has a runbook annotation pointing at a section of docs/operations.md', () => {
      expect(rules.length).toBeGreaterThan(10);
      for (const r of rules) {
        const anchor = /^docs\/operations\.md#([\w-]+)$/.exec(r.annotations?.runbook ?? '')?.[1];
        expect({ alert: r.alert, anchor, found: anchor !== undefined && anchors.has(anchor) }).toEqual({ alert: r.alert, anchor, found: true });
      }
    });
  });
});
