import Joi from 'joi';
import { env } from './env';

export interface HostPort {
  host: string;
  port: number;
}

/**
 * Where Redis is and how it is deployed. `url` always carries the credentials, the database and TLS (`rediss:`);
 * with a cluster or Sentinel its host is ignored and the nodes (or sentinels) are listed instead.
 */
export type RedisTarget = (
  | { kind: 'standalone'; url: string }
  | { kind: 'cluster'; url: string; nodes: HostPort[] }
  | { kind: 'sentinel'; url: string; sentinels: HostPort[]; master: string }
) & { limits?: RedisLimits };

/**
 * How long this process waits on Redis (docs/configuration.md): a black-holed Redis (packets dropped, not refused)
 * must fail a command within a bound, never hang it — createRedis applies these to every connection it makes.
 */
export interface RedisLimits {
  /** A command without a reply after this long fails (`Command timed out`). Workers wait at least 15 s (BullMQ blocks up to 10 s). */
  commandTimeoutMs: number;
  /** TCP keepalive's first probe after this much idle time: a dead peer is noticed without traffic. */
  keepAliveMs: number;
  /** The longest pause between reconnect attempts (they back off up to it and never stop). */
  reconnectMaxDelayMs: number;
}

/** The defaults of RedisLimits (the schema's and createRedis's without a config). */
export const REDIS_LIMIT_DEFAULTS: Readonly<RedisLimits> = Object.freeze({ commandTimeoutMs: 2000, keepAliveMs: 10_000, reconnectMaxDelayMs: 2000 });

/** The Redis part of every service's environment (REDIS_URL stays the default topology). */
export interface RedisEnv {
  REDIS_URL: string;
  /** `host:port,host:port,...`: seed nodes of a Redis Cluster (ioredis Cluster). Takes precedence over REDIS_URL's host. */
  REDIS_CLUSTER_NODES?: string;
  /** `host:port,...`: the sentinels watching REDIS_SENTINEL_MASTER (ioredis Sentinel support). */
  REDIS_SENTINELS?: string;
  REDIS_SENTINEL_MASTER?: string;
  REDIS_COMMAND_TIMEOUT_MS?: number;
  REDIS_KEEPALIVE_MS?: number;
  REDIS_RECONNECT_MAX_DELAY_MS?: number;
}

const HOST_PORT_LIST = /^[A-Za-z0-9_.\-[\]:]+:\d{1,5}(,[A-Za-z0-9_.\-[\]:]+:\d{1,5})*$/;

/** Joi fragments of RedisEnv (beside REDIS_URL): cluster and Sentinel exclude each other; a sentinel list needs its master. */
export const redisTopologySchema = {
  REDIS_CLUSTER_NODES: Joi.string().pattern(HOST_PORT_LIST, 'host:port,host:port,...').empty(''),
  REDIS_SENTINELS: Joi.string()
    .pattern(HOST_PORT_LIST, 'host:port,host:port,...')
    .empty('')
    .when('REDIS_CLUSTER_NODES', {
      is: Joi.exist(),
      then: Joi.forbidden().messages({ 'any.unknown': 'REDIS_SENTINELS cannot be combined with REDIS_CLUSTER_NODES' }),
    }),
  REDIS_SENTINEL_MASTER: Joi.string()
    .pattern(/^[A-Za-z0-9_.-]+$/)
    .max(100)
    .empty('')
    .when('REDIS_SENTINELS', { is: Joi.exist(), then: Joi.required() }),
  REDIS_COMMAND_TIMEOUT_MS: env.int(100, 120_000, REDIS_LIMIT_DEFAULTS.commandTimeoutMs),
  REDIS_KEEPALIVE_MS: env.int(1000, 600_000, REDIS_LIMIT_DEFAULTS.keepAliveMs),
  REDIS_RECONNECT_MAX_DELAY_MS: env.int(50, 60_000, REDIS_LIMIT_DEFAULTS.reconnectMaxDelayMs),
};

/** `a:1,b:2` → [{host:'a',port:1},{host:'b',port:2}]; the port is after the last colon (IPv6 literals keep theirs). */
export function parseHostPorts(list: string): HostPort[] {
  return list.split(',').map((item) => {
    const i = item.lastIndexOf(':');
    return { host: item.slice(0, i).replace(/^\[(.*)\]$/, '$1'), port: Number(item.slice(i + 1)) };
  });
}

/** The one reading of RedisEnv into a topology: cluster, else Sentinel, else the standalone REDIS_URL. */
export function redisTargetOf(e: Readonly<RedisEnv>): RedisTarget {
  const limits: RedisLimits = {
    commandTimeoutMs: e.REDIS_COMMAND_TIMEOUT_MS ?? REDIS_LIMIT_DEFAULTS.commandTimeoutMs,
    keepAliveMs: e.REDIS_KEEPALIVE_MS ?? REDIS_LIMIT_DEFAULTS.keepAliveMs,
    reconnectMaxDelayMs: e.REDIS_RECONNECT_MAX_DELAY_MS ?? REDIS_LIMIT_DEFAULTS.reconnectMaxDelayMs,
  };
  if (e.REDIS_CLUSTER_NODES) return { kind: 'cluster', url: e.REDIS_URL, nodes: parseHostPorts(e.REDIS_CLUSTER_NODES), limits };
  if (e.REDIS_SENTINELS) {
    return { kind: 'sentinel', url: e.REDIS_URL, sentinels: parseHostPorts(e.REDIS_SENTINELS), master: e.REDIS_SENTINEL_MASTER ?? 'mymaster', limits };
  }
  return { kind: 'standalone', url: e.REDIS_URL, limits };
}
