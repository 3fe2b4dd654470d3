import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { devhostConfigSchema } from '../../../adapters/devhost/config.ts';
import { DevhostAdapter } from '../../../adapters/devhost/devhost-adapter.ts';
import { buildPool } from '../../../adapters/registry.ts';
import { type AdapterCallTracer, tracedAdapter } from '../../../adapters/traced-adapter.ts';
import { isFileSystem, isPauser, isPortExposer, isStreamer } from '../../../lib/adapter/port.ts';
import { parseConfig } from '../../../lib/config.ts';
import { newId } from '../../../lib/ids.ts';
import { silentLog } from '../../../lib/log.ts';

function recordingTracer() {
  const calls: { pool: string; kind: string; method: string; outcome: 'ok' | 'error' }[] = [];
  const trace: AdapterCallTracer = async (pool, kind, method, call) => {
    try {
      const value = await call();
      calls.push({ pool, kind, method, outcome: 'ok' });
      return value;
    } catch (error) {
      calls.push({ pool, kind, method, outcome: 'error' });
      throw error;
    }
  };
  return { calls, trace };
}

describe('traced adapters', () => {
  it('traces every backend call with its pool, adapter kind and method, and keeps the adapter working', async () => {
    const root = await mkdtemp(join(tmpdir(), 'traced-'));
    const { calls, trace } = recordingTracer();
    // A real adapter with private fields: a proxy that passed itself as `this` would break it.
    const adapter = tracedAdapter(
      new DevhostAdapter(devhostConfigSchema.parse({ root })),
      'local',
      'devhost',
      trace,
    );
    expect(adapter.info().kind).toBe('devhost');
    const instance = await adapter.create({
      id: newId('sandbox'),
      installation: 'test',
      resources: { cpu: 1, memoryMiB: 512, diskGiB: 1 },
      env: {},
      labels: {},
    });
    const result = await adapter.exec(instance.ref, { command: 'echo traced' });
    expect(result.stdout).toBe('traced\n');
    await expect(adapter.get('no-such-ref')).rejects.toThrow();
    await adapter.delete(instance.ref);
    expect(calls).toEqual([
      { pool: 'local', kind: 'devhost', method: 'create', outcome: 'ok' },
      { pool: 'local', kind: 'devhost', method: 'exec', outcome: 'ok' },
      { pool: 'local', kind: 'devhost', method: 'get', outcome: 'error' },
      { pool: 'local', kind: 'devhost', method: 'delete', outcome: 'ok' },
    ]);
    // info() is local: not a backend call, not traced.
    expect(calls.map((c) => c.method)).not.toContain('info');
  });

  it('leaves the optional capabilities as the adapter has them', async () => {
    const { trace } = recordingTracer();
    const adapter = tracedAdapter(
      new DevhostAdapter(devhostConfigSchema.parse({ root: tmpdir() })),
      'local',
      'devhost',
      trace,
    );
    expect(isStreamer(adapter)).toBe(true);
    expect(isFileSystem(adapter)).toBe(true);
    expect(isPauser(adapter)).toBe(true);
    // devhost exposes no ports: the wrapper must not invent the method.
    expect(isPortExposer(adapter)).toBe(false);
  });

  it('is what buildPool hands the registry when the wiring gives a tracer, the capabilities probe included', async () => {
    const { calls, trace } = recordingTracer();
    const config = parseConfig({
      devMode: true,
      pools: [{ name: 'dev', adapter: 'devhost', config: { root: tmpdir() } }],
    });
    const pool = await buildPool(config.pools[0] as (typeof config.pools)[number], {
      log: silentLog,
      traceAdapterCall: trace,
    });
    expect(calls).toEqual([{ pool: 'dev', kind: 'devhost', method: 'capabilities', outcome: 'ok' }]);
    await pool.adapter?.health();
    expect(calls.at(-1)).toMatchObject({ method: 'health', pool: 'dev' });
  });
});
