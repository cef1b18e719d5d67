import Joi from 'joi';

export interface HostPort {
  host: string;
  port: number;
}

/**
 * Where Redis is and how it is deployed. `url` always carries the credentials, the database and TLS (`rediss:`);
 * with a cluster or Sentinel its host is ignored and the nodes (or sentinels) are listed instead.
 */
export type RedisTarget =
  | { kind: 'standalone'; url: string }
  | { kind: 'cluster'; url: string; nodes: HostPort[] }
  | { kind: 'sentinel'; url: string; sentinels: HostPort[]; master: string };

/** The Redis part of every service's environment (REDIS_URL stays the default topology). */
export interface RedisEnv {
  REDIS_URL: string;
  /** `host:port,host:port,...`: seed nodes of a Redis Cluster (ioredis Cluster). Takes precedence over REDIS_URL's host. */
  REDIS_CLUSTER_NODES?: string;
  /** `host:port,...`: the sentinels watching REDIS_SENTINEL_MASTER (ioredis Sentinel support). */
  REDIS_SENTINELS?: string;
  REDIS_SENTINEL_MASTER?: string;
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
  if (e.REDIS_CLUSTER_NODES) return { kind: 'cluster', url: e.REDIS_URL, nodes: parseHostPorts(e.REDIS_CLUSTER_NODES) };
  if (e.REDIS_SENTINELS) {
    return { kind: 'sentinel', url: e.REDIS_URL, sentinels: parseHostPorts(e.REDIS_SENTINELS), master: e.REDIS_SENTINEL_MASTER ?? 'mymaster' };
  }
  return { kind: 'standalone', url: e.REDIS_URL };
}
