import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { run } from '../../cli/differently.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';
import { parseJson } from '../helpers/json.ts';

/** The CLI in process against the local runtime: what it writes and its exit code. */
async function cli(e: E2e, argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, {
    stdout: { write: (chunk) => (stdout += String(chunk)) },
    stderr: { write: (chunk) => (stderr += String(chunk)) },
    env: { DIFFERENTLY_ENDPOINT: e.runtime.url, DIFFERENTLY_API_KEY: e.key },
  });
  return { code, stdout, stderr };
}

describe('the CLI’s waits and create flags', () => {
  let e: E2e;
  beforeAll(async () => {
    e = await startE2e({ quota: { maxSandboxes: 1 }, fakes: { fake: { adapter: new FakeAdapter() } } });
  });
  afterAll(async () => {
    await e?.stop();
  });

  it('creates with resources and labels, prints the id at once and each status change on stderr, the record on stdout', async () => {
    const created = await cli(e, [
      'sandboxes',
      'create',
      '--pool',
      'fake',
      '--cpu',
      '0.5',
      '--memory',
      '512',
      '--disk',
      '2',
      '--label',
      'team=cli',
      '--wait',
      '--json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const sandbox = parseJson(
      z.object({ id: z.string(), status: z.string(), resources: z.unknown(), labels: z.unknown() }),
      created.stdout,
    );
    expect(sandbox).toMatchObject({ status: 'running', resources: { cpu: 0.5, memoryMiB: 512, diskGiB: 2 } });
    const lines = created.stderr.trim().split('\n');
    expect(lines[0]).toBe(
      `${sandbox.id}: created; waiting for it to run (Ctrl-C stops waiting, not the sandbox)`,
    );
    expect(lines.at(-1)).toBe(`${sandbox.id}: running`);

    const listed = await cli(e, ['sandboxes', 'list', '--label', 'team=cli', '--json']);
    const page = z.object({ items: z.array(z.object({ id: z.string() })) });
    expect(parseJson(page, listed.stdout).items.map((s) => s.id)).toEqual([sandbox.id]);
    const none = await cli(e, ['sandboxes', 'list', '--label', 'team=nobody', '--json']);
    expect(parseJson(page, none.stdout).items).toEqual([]);
  });

  it('says why it waits, and on --timeout ends with that reason and the id it already printed', async () => {
    // The org's one sandbox runs (the test above): a second one waits for quota.
    const waited = await cli(e, ['sandboxes', 'create', '--pool', 'fake', '--wait', '--timeout', '3']);
    expect(waited.code).toBe(1);
    const id = /^(sbx_\w+): created/.exec(waited.stderr)?.[1];
    expect(id).toBeDefined();
    expect(waited.stderr).toContain(`${id}: queued (waiting for quota): waiting for quota`);
    expect(waited.stderr).toMatch(
      /error: timeout: .*was not running in time \(last: queued: waiting for quota/,
    );
    await e.api.delete(`/v1/sandboxes/${id}`, e.key);
  });

  it('refuses a bad resource flag before calling the API', async () => {
    const bad = await cli(e, ['sandboxes', 'create', '--cpu', 'lots']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--cpu takes a positive number');
  });
});
