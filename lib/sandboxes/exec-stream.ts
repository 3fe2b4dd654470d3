import { isStreamer } from '../adapter/port.ts';
import { errors, toErrorResponse } from '../errors.ts';
import { describeError } from '../log.ts';
import type { ExecStreamLine } from '../schemas/exec-stream-lines.ts';
import type { ExecRequest } from '../schemas/sandboxes.ts';
import type { OrgPrincipal } from '../tenancy/auth.ts';
import { commandEnv } from './command-env.ts';
import { requireRunAsOffered } from './run-as.ts';
import type { SandboxService, SandboxServiceDeps } from './service.ts';
import { requireRunning } from './status-guards.ts';

/**
 * Writes a chunk of a streamed body (text, or bytes for binary framing such as Connect's envelopes); a
 * returned promise means "wait: the client has not read enough".
 */
export type StreamWrite = (chunk: string | Buffer) => void | Promise<void>;

/** API Gateway's streamed responses last at most 15 minutes; the command must end within them. */
export const maxStreamSeconds = 14 * 60;
/** Sent while a command is silent, so API Gateway's idle cut (5 minutes, Regional) never ends the stream. */
export const keepAliveMs = 60_000;

/**
 * Streamed exec: `{"stream","data"}` lines as output is produced, then exactly one `{"exitCode"}` or
 * `{"error"}`. Checks (state, size of the timeout) happen before the first byte so they can still be a
 * proper HTTP error; after that, failures are the final `{"error"}` line. Without the pool's exec.stream
 * feature the output is buffered and sent as one stdout and one stderr line before the exit.
 */
export async function prepareExecStream(
  deps: SandboxServiceDeps,
  sandboxes: SandboxService,
  principal: OrgPrincipal,
  id: string,
  request: ExecRequest,
  /** The client went away: the command is cancelled on the backend (devhost kills its process group). */
  cancelled?: AbortSignal,
): Promise<(send: (line: ExecStreamLine) => void | Promise<void>) => Promise<void>> {
  if (request.timeoutSeconds !== undefined && request.timeoutSeconds > maxStreamSeconds) {
    throw errors.invalidRequest(`timeoutSeconds can be at most ${maxStreamSeconds} for a streamed exec`, {
      field: 'timeoutSeconds',
      max: maxStreamSeconds,
    });
  }
  const record = requireRunning(await sandboxes.loadForUse(principal, id));
  requireRunAsOffered(deps, record, request.user);
  const adapter = deps.pools.adapterOf(record.pool);
  const streams = deps.pools.featuresOf(record.pool).includes('exec.stream') && isStreamer(adapter);
  const ref = record.backendRef;
  const timeoutSeconds = request.timeoutSeconds ?? maxStreamSeconds;
  const env = commandEnv(record, request.env);
  const command = { ...request, timeoutSeconds, ...(env !== undefined && { env }) };
  const limit = AbortSignal.timeout((timeoutSeconds + 30) * 1000);
  const options = { signal: cancelled === undefined ? limit : AbortSignal.any([limit, cancelled]) };
  return async (send) => {
    const stillActive = sandboxes.keepActive(record);
    try {
      if (streams) {
        const exitCode = await adapter.execStream(ref, command, (event) => send(event), options);
        await send({ exitCode });
        return;
      }
      const result = await adapter.exec(ref, command, options);
      if (result.stdout !== '') await send({ stream: 'stdout', data: result.stdout });
      if (result.stderr !== '') await send({ stream: 'stderr', data: result.stderr });
      await send({ exitCode: result.exitCode });
    } catch (error) {
      // The status line is gone: the error can only be the final line now, in the one error model
      // (code and message as a buffered answer would carry them, unexpected errors masked and logged).
      const { body, masked } = toErrorResponse(error);
      if (masked) deps.log.error('streamed exec failed', { sandboxId: id, error: describeError(error) });
      await send({ error: { code: body.error.code, message: body.error.message } });
    } finally {
      await stillActive();
    }
  };
}

/** Turns the line producer into NDJSON chunks, with keep-alive blank lines while the command is silent. */
export function ndjsonStream<L = ExecStreamLine>(
  produce: (send: (line: L) => void | Promise<void>) => Promise<void>,
): (write: StreamWrite) => Promise<void> {
  return async (write) => {
    let last = Date.now();
    const timer = setInterval(
      () => {
        if (Date.now() - last >= keepAliveMs) {
          write('\n');
          last = Date.now();
        }
      },
      Math.min(keepAliveMs, 10_000),
    );
    try {
      // The write's promise (the client is behind) goes back to the producer, which waits on it.
      await produce((line) => {
        last = Date.now();
        return write(`${JSON.stringify(line)}\n`);
      });
    } finally {
      clearInterval(timer);
    }
  };
}
