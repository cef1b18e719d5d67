/**
 * The object as a dependency sees it, with every method called on it recorded by name (in order). For a Redis
 * client: a command given to a client that is not ready waits in its offline queue for reconnection attempts, so
 * "no request waits on a dead Redis" is shown as "no call reached the client".
 */
export function recordCalls<T extends object>(target: T): { proxy: T; calls: string[] } {
  const calls: string[] = [];
  const proxy = new Proxy(target, {
    get(t, prop) {
      const value: unknown = Reflect.get(t, prop, t);
      if (typeof value !== 'function' || prop === 'constructor') return value;
      return (...args: unknown[]) => {
        calls.push(String(prop));
        return (value as (...a: unknown[]) => unknown).apply(t, args);
      };
    },
  });
  return { proxy, calls };
}
