import { backendCalls } from '../lib/adapter/backend-calls.ts';
import type { ExecutionAdapter } from '../lib/adapter/port.ts';

/**
 * Runs one adapter call inside a trace subsegment named `<kind>.<method>`, annotated with the pool: the
 * wiring supplies it with Powertools' Tracer, so every provider call (and the HTTP requests it makes,
 * which the Tracer captures beneath it) is visible per pool in X-Ray.
 */
export type AdapterCallTracer = <T>(
  pool: string,
  kind: string,
  method: string,
  call: () => Promise<T>,
) => Promise<T>;

/** The contract's calls that reach a backend, as a set for the proxy's lookups. */
const traced: ReadonlySet<string> = new Set(backendCalls);

/**
 * The adapter with each backend call traced. Only methods the adapter has are wrapped, so the optional
 * capabilities (`hasMethods` checks) read the same through the wrapper.
 */
export function tracedAdapter(
  adapter: ExecutionAdapter,
  pool: string,
  kind: string,
  trace: AdapterCallTracer,
): ExecutionAdapter {
  return new Proxy(adapter, {
    get(target, property) {
      // The target as receiver: adapters keep private fields, which a proxy as `this` could not reach.
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (typeof property !== 'string' || !traced.has(property)) return method.bind(target);
      return (...args: unknown[]) =>
        trace(pool, kind, property, async () => await (method.apply(target, args) as Promise<unknown>));
    },
  });
}
