import { describe, expect, it } from 'vitest';
import { requireValidPools } from '../../adapters/kinds.ts';
import { parseConfig, parseConfigText } from '../../lib/config.ts';
import { ApiError } from '../../lib/errors.ts';

/** A config as every entry point checks it: the schema, then the adapter-kind registry. */
function problem(input: unknown): string {
  try {
    requireValidPools(parseConfig(input), 'the config');
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return (error as ApiError).message;
  }
  throw new Error('expected the config to be refused');
}

describe('config', () => {
  it('fills defaults', () => {
    const config = parseConfig({ devMode: true, pools: [{ name: 'fake', adapter: 'fake' }] });
    expect(config.scheduler).toEqual({
      maxAttempts: 3,
      provisionTimeoutSeconds: 120,
      terminateTimeoutSeconds: 60,
      operationTimeoutSeconds: 600,
      lostMessageSeconds: 300,
      stuckTerminationSeconds: 600,
      reconcileGraceSeconds: 30,
    });
    expect(config.pools[0]).toMatchObject({ name: 'fake', trust: 'private', maxConcurrency: 0, config: {} });
  });

  it('names an unknown adapter kind and its field', () => {
    expect(problem({ devMode: true, pools: [{ name: 'x', adapter: 'firecracker' }] })).toMatch(
      /pools\[0\]\.adapter: adapter must be one of: devhost, fake/,
    );
  });

  it('refuses an E2B template mapped onto a template it does not define', () => {
    const e2b = {
      templates: { 'code-interpreter-v1': { template: 'python', capabilities: ['exec.stdin'] } },
    };
    expect(problem({ devMode: true, pools: [{ name: 'x', adapter: 'fake' }], e2b })).toMatch(
      /e2b\.templates\.code-interpreter-v1\.template: no template named python/,
    );
    const config = parseConfig({ devMode: true, templates: [{ name: 'python' }], e2b });
    expect(config.e2b.templates['code-interpreter-v1']).toEqual({
      template: 'python',
      capabilities: ['exec.stdin'],
    });
  });

  it('names an unknown field', () => {
    expect(problem({ devMode: true, pools: [{ name: 'x', adapter: 'fake', colour: 'red' }] })).toMatch(
      /pools\[0\]\.colour: unknown field/,
    );
  });

  it('refuses dev-only adapters outside dev mode', () => {
    expect(problem({ pools: [{ name: 'local', adapter: 'devhost' }] })).toMatch(
      /pools\[0\]\.adapter: the devhost adapter runs without isolation and is allowed only with devMode: true/,
    );
  });

  it('refuses a vendor pool without credentials, naming the field', () => {
    expect(
      problem({
        pools: [{ name: 'dtn', adapter: 'daytona', config: { apiURL: 'https://app.daytona.io/api' } }],
      }),
    ).toMatch(/pools\[0\]\.credentials: the daytona adapter needs credentials/);
  });

  it('refuses duplicate pool names', () => {
    expect(
      problem({
        devMode: true,
        pools: [
          { name: 'a', adapter: 'fake' },
          { name: 'a', adapter: 'fake' },
        ],
      }),
    ).toMatch(/pools\[1\]\.name: pool a is defined twice/);
  });

  it('says where JSON is broken', () => {
    expect(() => parseConfigText('{"devMode": tru}', 'differently.json')).toThrow(
      /differently.json is not valid JSON/,
    );
  });
});
