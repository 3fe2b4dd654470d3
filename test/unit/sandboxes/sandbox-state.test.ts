import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../lib/errors.ts';
import { assertTransition, requireRunning } from '../../../lib/sandboxes/status-guards.ts';
import {
  canTransition,
  isSettledWithInstance,
  isTerminal,
  type SandboxStatus,
  sandboxStatuses,
} from '../../../lib/schemas/sandbox-status.ts';

/** The lifecycle as the seeds describe it, written out independently of the implementation's table. */
const allowed = new Set([
  'queued>provisioning',
  'queued>terminating',
  'queued>failed',
  'provisioning>queued',
  'provisioning>running',
  'provisioning>terminating',
  'provisioning>failed',
  'running>stopped',
  'running>paused',
  'running>terminating',
  'running>failed',
  'stopped>running',
  'stopped>terminating',
  'stopped>failed',
  'paused>running',
  // The reconciler follows an instance the backend reports stopped, for running and paused sandboxes.
  'paused>stopped',
  'paused>terminating',
  'paused>failed',
  // Lifecycle calls pass through a transitional status the operations worker ends: forward on success,
  // back on a backend refusal; a transitional sandbox may still be deleted or failed.
  'running>stopping',
  'running>pausing',
  'stopped>starting',
  'paused>resuming',
  'stopping>stopped',
  'stopping>running',
  'stopping>terminating',
  'stopping>failed',
  'starting>running',
  'starting>stopped',
  'starting>terminating',
  'starting>failed',
  'pausing>paused',
  'pausing>running',
  'pausing>terminating',
  'pausing>failed',
  'resuming>running',
  'resuming>paused',
  'resuming>terminating',
  'resuming>failed',
  'terminating>terminated',
  'failed>terminating',
]);

const pairs = sandboxStatuses.flatMap((from) =>
  sandboxStatuses.map((to) => [from, to] as [SandboxStatus, SandboxStatus]),
);

describe('sandbox state machine', () => {
  it.each(pairs.filter(([from, to]) => allowed.has(`${from}>${to}`)))('allows %s -> %s', (from, to) => {
    expect(canTransition(from, to)).toBe(true);
    expect(() => assertTransition(from, to)).not.toThrow();
  });

  it.each(pairs.filter(([from, to]) => !allowed.has(`${from}>${to}`)))(
    'refuses %s -> %s with invalid_state',
    (from, to) => {
      expect(canTransition(from, to)).toBe(false);
      let thrown: unknown;
      try {
        assertTransition(from, to);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ApiError);
      expect((thrown as ApiError).code).toBe('invalid_state');
      expect((thrown as ApiError).details).toEqual({ status: from, requested: to });
    },
  );

  it('keeps terminated final', () => {
    expect(sandboxStatuses.filter((to) => canTransition('terminated', to))).toEqual([]);
  });

  it('names both states when it refuses a move', () => {
    expect(() => assertTransition('terminated', 'running')).toThrow(
      'a sandbox cannot go from terminated to running',
    );
  });

  it('ends only in terminated and failed; holds an instance at rest only when running, stopped or paused', () => {
    expect(sandboxStatuses.filter(isTerminal)).toEqual(['terminated', 'failed']);
    expect(sandboxStatuses.filter(isSettledWithInstance)).toEqual(['running', 'stopped', 'paused']);
  });

  it('lets an exec run only in a running sandbox that has its pool and its backend instance', () => {
    const base = { id: 'sbx_1', status: 'running' as SandboxStatus, pool: 'p', backendRef: 'vm-1' };
    expect(requireRunning(base)).toBe(base);
    for (const refused of [
      { ...base, status: 'stopped' as SandboxStatus },
      { ...base, pool: null },
      { ...base, backendRef: null },
    ]) {
      let thrown: unknown;
      try {
        requireRunning(refused);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ApiError);
      expect(thrown).toMatchObject({
        code: 'invalid_state',
        message: `exec needs a running sandbox; sbx_1 is ${refused.status}`,
        details: { status: refused.status },
      });
    }
  });
});
