import { randomUUID } from 'node:crypto';
import { errors, toErrorResponse } from '../errors.ts';
import type { HttpResponse } from '../http/types.ts';
import { safeParseJsonText } from '../json-text.ts';
import { describeError, type Log } from '../log.ts';
import type { StreamWrite } from '../sandboxes/exec-stream.ts';
import type { AttachLine, SandboxProcesses } from '../sandboxes/processes.ts';
import type { ProcessView } from '../schemas/processes.ts';
import type { OrgPrincipal } from '../tenancy/auth.ts';
import * as z from '../zod.ts';
import { codeKernelSource } from './code-kernel.ts';
import { parseBody } from './control-api.ts';
import { e2bHome } from './envd.ts';

/**
 * `@e2b/code-interpreter`'s Jupyter routes (port 49999: /execute, /contexts), served from the control
 * plane: each code context is a kernel (./code-kernel.ts) running in the sandbox as an interactive
 * process tagged with the context, so every container finds it by listing the sandbox's processes and
 * nothing is kept anywhere else. A cell is written to the kernel's stdin and its messages are read from
 * an attach, filtered by the cell's id (several callers may be attached to one kernel).
 */
export interface CodeInterpreterDeps {
  processes: SandboxProcesses;
  log: Log;
}

/** The port the SDK names in E2b-Sandbox-Port for these routes. */
export const codeInterpreterPort = '49999';

const tagPrefix = 'e2b-code-context:';
/** The context a cell runs in when it names none: started by the first such cell. */
const defaultContextId = 'default';
/** A kernel lives as long as a process may (the backend's maximum applies: devhost 2 hours). */
const kernelSeconds = 24 * 3600;
/** A cell's code is written in pieces, each a line far under the 64 KiB a process write takes. */
const pieceChars = 8192;
const maxWriteBytes = 60 * 1024;
/** A silent cell still sends a line this often: API Gateway ends a stream silent for 5 minutes. */
const keepAliveMs = 30_000;

const languages = new Set(['python', 'python3']);

const executeSchema = z.looseObject({
  code: z.string().check(z.maxLength(1024 * 1024)),
  context_id: z.optional(z.nullable(z.string().check(z.minLength(1), z.maxLength(128)))),
  language: z.optional(z.nullable(z.string().check(z.maxLength(64)))),
  env_vars: z.optional(z.nullable(z.record(z.string(), z.string()))),
});

const createContextSchema = z.looseObject({
  language: z.optional(z.nullable(z.string().check(z.maxLength(64)))),
  cwd: z.optional(z.nullable(z.string().check(z.minLength(1), z.maxLength(4096)))),
});

/** A kernel's message: liberal in the rest, as it is passed on to the SDK as it is. */
const kernelMessageSchema = z.looseObject({ id: z.nullable(z.string()), type: z.string() });

interface Kernel {
  contextId: string;
  language: string;
  cwd: string;
  pid: number;
  startedAt: string;
}

function kernelOf(process: ProcessView): Kernel | undefined {
  if (process.exitCode !== null || process.tag === null || !process.tag.startsWith(tagPrefix))
    return undefined;
  const [contextId = '', language = 'python'] = process.tag.slice(tagPrefix.length).split(':');
  return { contextId, language, cwd: process.cwd, pid: process.pid, startedAt: process.startedAt };
}

function languageOf(language: string | null | undefined): string {
  const asked = (language ?? 'python').toLowerCase();
  if (!languages.has(asked))
    throw errors.invalidRequest(
      `language ${asked} is not offered: the code interpreter's kernel runs Python (docs/e2b.md)`,
    );
  return 'python';
}

/** The cell's code as input lines: pieces, then the run request; packed into writes on line boundaries. */
export function cellInput(cellId: string, code: string, envVars: Record<string, string>): string[] {
  const lines: string[] = [];
  for (let at = 0; at < code.length; ) {
    let end = Math.min(code.length, at + pieceChars);
    // Never between the halves of a surrogate pair: each piece must be text on its own.
    if (end < code.length && /[\uD800-\uDBFF]/.test(code.charAt(end - 1))) end -= 1;
    lines.push(`${JSON.stringify({ id: cellId, append: code.slice(at, end) })}\n`);
    at = end;
  }
  lines.push(`${JSON.stringify({ id: cellId, run: { env_vars: envVars } })}\n`);
  const writes: string[] = [];
  let current = '';
  for (const line of lines) {
    if (current !== '' && Buffer.byteLength(current + line) > maxWriteBytes) {
      writes.push(current);
      current = '';
    }
    current += line;
  }
  writes.push(current);
  return writes;
}

export class E2bCodeInterpreter {
  readonly #deps: CodeInterpreterDeps;

  constructor(deps: CodeInterpreterDeps) {
    this.#deps = deps;
  }

  /**
   * POST /execute: the cell's messages as JSON lines, streamed as the kernel sends them. Checks (the
   * context, the language, the pool's interactive processes) happen before the stream starts, so they
   * are HTTP statuses the SDK maps (404: NotFoundError).
   */
  async execute(
    principal: OrgPrincipal,
    sandboxId: string,
    body: unknown,
    cancelled: AbortSignal | undefined,
  ): Promise<HttpResponse> {
    const request = parseBody(executeSchema, body, 'execute body');
    if (request.context_id != null && request.language != null)
      throw errors.invalidRequest('send a context_id or a language, not both');
    const kernel =
      request.context_id != null
        ? await this.#kernel(principal, sandboxId, request.context_id)
        : await this.#defaultKernel(principal, sandboxId, languageOf(request.language));
    const finished = new AbortController();
    const signal = cancelled === undefined ? finished.signal : AbortSignal.any([cancelled, finished.signal]);
    const produce = await this.#deps.processes.attach(principal, sandboxId, kernel.pid, signal);
    const cellId = randomUUID();
    const input = cellInput(cellId, request.code, request.env_vars ?? {});
    const stream = async (write: StreamWrite) => {
      let last = Date.now();
      const send = async (message: Record<string, unknown>) => {
        last = Date.now();
        await write(`${JSON.stringify(message)}\n`);
      };
      const keepAlive = setInterval(() => {
        if (Date.now() - last >= keepAliveMs) void send({ type: 'keepalive' });
      }, keepAliveMs / 5);
      let ended = false;
      let kernelEnded = false;
      let pending = '';
      let kernelErrors = '';
      const fail = async (name: string, value: string) => {
        if (ended) return;
        ended = true;
        await send({ type: 'error', name, value, traceback: '' });
      };
      const onLine = async (line: AttachLine) => {
        if ('stream' in line) {
          if (line.stream === 'stderr') {
            kernelErrors = (kernelErrors + line.data).slice(-2000);
            return;
          }
          pending += line.data;
          for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
            const text = pending.slice(0, newline);
            pending = pending.slice(newline + 1);
            const parsed = safeParseJsonText(kernelMessageSchema, text);
            if (!parsed.success || parsed.data.id !== cellId || ended) continue;
            const { id: _cell, ...message } = parsed.data;
            if (message.type === 'end_of_execution') {
              ended = true;
              finished.abort();
              return;
            }
            await send(message);
          }
        } else if ('exitCode' in line) {
          kernelEnded = true;
          await fail(
            'KernelExited',
            `the code context's kernel ended with code ${line.exitCode}${kernelErrors === '' ? '' : `: ${kernelErrors.trim()}`}; its state is gone (restart the context, or run again in the default one)`,
          );
        } else if ('detached' in line) {
          await fail('TimeoutError', `the cell is still running: ${line.detached.reason}`);
        } else if ('error' in line) {
          await fail('KernelError', line.error.message);
        }
      };
      try {
        const reading = produce(onLine);
        try {
          for (const chunk of input)
            await this.#deps.processes.stdin(principal, sandboxId, kernel.pid, { data: chunk });
        } catch (error) {
          finished.abort();
          await reading;
          await fail('KernelError', toErrorResponse(error).body.error.message);
          return;
        }
        await reading;
      } finally {
        clearInterval(keepAlive);
        // A cell its caller gave up on (or that outran the stream) is interrupted, as Jupyter's interrupt does.
        if (!ended && !kernelEnded) await this.#interrupt(principal, sandboxId, kernel.pid);
      }
    };
    return { status: 200, headers: { 'content-type': 'application/json' }, body: '', stream };
  }

  /** POST /contexts: a new kernel, in its own cwd (the home by default). */
  async createContext(principal: OrgPrincipal, sandboxId: string, body: unknown) {
    const request = parseBody(createContextSchema, body ?? {}, 'context body');
    const kernel = await this.#launch(
      principal,
      sandboxId,
      randomUUID(),
      languageOf(request.language),
      request.cwd ?? e2bHome,
    );
    return contextView(kernel);
  }

  async listContexts(principal: OrgPrincipal, sandboxId: string) {
    return (await this.#kernels(principal, sandboxId)).map(contextView);
  }

  async removeContext(principal: OrgPrincipal, sandboxId: string, contextId: string): Promise<void> {
    await this.#kernel(principal, sandboxId, contextId);
    await this.#end(principal, sandboxId, contextId);
  }

  /** A fresh kernel for the context (its state is gone), in the same cwd, under the same id. */
  async restartContext(principal: OrgPrincipal, sandboxId: string, contextId: string): Promise<void> {
    const kernel = await this.#kernel(principal, sandboxId, contextId);
    await this.#end(principal, sandboxId, contextId);
    await this.#launch(principal, sandboxId, contextId, kernel.language, kernel.cwd);
  }

  /** The running kernels, the earliest first: of several with one context id, the earliest is the context's. */
  async #kernels(principal: OrgPrincipal, sandboxId: string): Promise<Kernel[]> {
    const kernels = (await this.#deps.processes.list(principal, sandboxId)).flatMap(
      (process) => kernelOf(process) ?? [],
    );
    kernels.sort((a, b) => a.startedAt.localeCompare(b.startedAt) || a.pid - b.pid);
    const seen = new Set<string>();
    return kernels.filter((kernel) => !seen.has(kernel.contextId) && seen.add(kernel.contextId));
  }

  async #kernel(principal: OrgPrincipal, sandboxId: string, contextId: string): Promise<Kernel> {
    const found = (await this.#kernels(principal, sandboxId)).find(
      (kernel) => kernel.contextId === contextId,
    );
    if (found === undefined) throw errors.notFound('code context', contextId);
    return found;
  }

  async #defaultKernel(principal: OrgPrincipal, sandboxId: string, language: string): Promise<Kernel> {
    const found = (await this.#kernels(principal, sandboxId)).find(
      (kernel) => kernel.contextId === defaultContextId,
    );
    return found ?? this.#launch(principal, sandboxId, defaultContextId, language, e2bHome);
  }

  /**
   * Starts a kernel; if another container started one for the same context meanwhile, the earliest is the
   * context's and this one ends (every container decides the same from the same list).
   */
  async #launch(
    principal: OrgPrincipal,
    sandboxId: string,
    contextId: string,
    language: string,
    cwd: string,
  ): Promise<Kernel> {
    const started = await this.#deps.processes.start(principal, sandboxId, {
      args: ['python3', '-u', '-c', codeKernelSource],
      cwd,
      env: { PYTHONDONTWRITEBYTECODE: '1' },
      tag: `${tagPrefix}${contextId}:${language}`,
      timeoutSeconds: kernelSeconds,
    });
    const winner = (await this.#kernels(principal, sandboxId)).find(
      (kernel) => kernel.contextId === contextId,
    );
    if (winner !== undefined && winner.pid !== started.pid) {
      await this.#deps.processes.signal(principal, sandboxId, started.pid, 'SIGKILL').catch(() => undefined);
      return winner;
    }
    return {
      contextId,
      language,
      cwd: started.cwd,
      pid: started.pid,
      startedAt: started.startedAt,
    };
  }

  /** Ends every kernel of the context and waits (a few seconds at most) until none is listed running. */
  async #end(principal: OrgPrincipal, sandboxId: string, contextId: string): Promise<void> {
    const deadline = Date.now() + 5000;
    for (;;) {
      const running = (await this.#deps.processes.list(principal, sandboxId))
        .flatMap((process) => kernelOf(process) ?? [])
        .filter((kernel) => kernel.contextId === contextId);
      if (running.length === 0) return;
      if (Date.now() > deadline)
        throw errors.providerUnavailable(`the kernel of code context ${contextId} did not end: try again`);
      for (const kernel of running)
        await this.#deps.processes.signal(principal, sandboxId, kernel.pid, 'SIGKILL').catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async #interrupt(principal: OrgPrincipal, sandboxId: string, pid: number): Promise<void> {
    await this.#deps.processes.signal(principal, sandboxId, pid, 'SIGINT').catch((error: unknown) => {
      this.#deps.log.warn('could not interrupt a code cell', {
        sandboxId,
        pid,
        error: describeError(error),
      });
    });
  }
}

function contextView(kernel: Kernel) {
  return { id: kernel.contextId, language: kernel.language, cwd: kernel.cwd };
}
