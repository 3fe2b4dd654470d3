import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { describeError, type Log } from '../../lib/log.ts';

/** An invocation that ran past its function's timeout: Lambda ends it and discards the container. */
export class FunctionTimeout extends Error {
  override readonly name = 'FunctionTimeout';
}

interface Container<H> {
  id: number;
  handler: Promise<H>;
  busy: number;
  invocations: number;
}

export interface FunctionContainersOptions<H> {
  /** The function's name, for logs and the containers' ids. */
  name: string;
  /** How many containers may exist at once (Lambda would start more; locally the count is fixed). */
  count: number;
  /**
   * A cold start: builds one container's handler with its own module state (pool registry, caches,
   * clients), as the function's wiring does on Lambda.
   */
  coldStart: () => Promise<H>;
  /** The function's timeout (functionTimeouts in lib/function-timeouts.ts). */
  timeoutSeconds: number;
  log: Log;
}

/**
 * A function's containers, as Lambda runs them: each invocation goes to an idle container (the next one
 * in turn, so consecutive calls land on different containers), a new one is cold-started while fewer than
 * `count` exist, and an invocation past the function's timeout is abandoned and its container discarded.
 * When every container is busy the least busy one takes the invocation: Lambda would start another
 * container instead, and the fixed count keeps the local process small (docs/local-testing.md).
 */
export class FunctionContainers<H> {
  readonly #options: FunctionContainersOptions<H>;
  #containers: Container<H>[] = [];
  #next = 0;
  #started = 0;

  constructor(options: FunctionContainersOptions<H>) {
    if (!Number.isInteger(options.count) || options.count < 1)
      throw new Error(`${options.name}: at least one container, not ${options.count}`);
    this.#options = options;
  }

  /** The function's timeout, as the stack deploys it. */
  get timeoutSeconds(): number {
    return this.#options.timeoutSeconds;
  }

  /** Containers started so far (cold starts), including discarded ones. */
  get coldStarts(): number {
    return this.#started;
  }

  /** How many invocations each live container has served, by container id. */
  invocationsByContainer(): Record<string, number> {
    return Object.fromEntries(this.#containers.map((c) => [`${this.#options.name}-${c.id}`, c.invocations]));
  }

  /**
   * Runs one invocation on a container, within the function's timeout. The call gets the invocation's
   * Lambda context (request id, function name, remaining time), as the handler does on Lambda.
   */
  async invoke<R>(call: (handler: H, context: Context) => Promise<R>): Promise<R> {
    const container = this.#pick();
    container.busy++;
    container.invocations++;
    let timer: NodeJS.Timeout | undefined;
    const timeoutMs = this.#options.timeoutSeconds * 1000;
    const context = this.#context(container, Date.now() + timeoutMs);
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        // As Lambda: the container is gone with its in-memory state; later calls cold-start another.
        this.#containers = this.#containers.filter((c) => c !== container);
        reject(
          new FunctionTimeout(
            `${this.#options.name}: the invocation ran past the function's timeout of ${this.#options.timeoutSeconds} s`,
          ),
        );
      }, timeoutMs);
      timer.unref();
    });
    try {
      return await Promise.race([container.handler.then((handler) => call(handler, context)), timedOut]);
    } finally {
      clearTimeout(timer);
      container.busy--;
    }
  }

  #context(container: Container<H>, deadline: number): Context {
    const functionName = `differently-${this.#options.name}`;
    const unsupported = () => {
      throw new Error('the callback API is not supported: handlers are async');
    };
    return {
      callbackWaitsForEmptyEventLoop: false,
      functionName,
      functionVersion: '$LATEST',
      invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
      memoryLimitInMB: '512',
      awsRequestId: randomUUID(),
      logGroupName: `/aws/lambda/${functionName}`,
      logStreamName: `local/${this.#options.name}-${container.id}`,
      getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
      done: unsupported,
      fail: unsupported,
      succeed: unsupported,
    };
  }

  #pick(): Container<H> {
    const live = this.#containers;
    for (let i = 0; i < live.length; i++) {
      const candidate = live[(this.#next + i) % live.length];
      if (candidate !== undefined && candidate.busy === 0) {
        this.#next = (this.#next + i + 1) % Math.max(live.length, 1);
        // Between idle containers, prefer starting a new one while below the count: as Lambda spreads a
        // burst, and so that every test meets several containers early.
        if (live.length < this.#options.count && candidate.invocations > 0) return this.#coldStart();
        return candidate;
      }
    }
    if (live.length < this.#options.count) return this.#coldStart();
    return live.reduce((least, c) => (c.busy < least.busy ? c : least));
  }

  #coldStart(): Container<H> {
    const id = ++this.#started;
    const container: Container<H> = { id, handler: this.#options.coldStart(), busy: 0, invocations: 0 };
    // A failed cold start is not kept: the next invocation starts another (as Lambda's init retry).
    container.handler.catch((error: unknown) => {
      this.#options.log.error('cold start failed', {
        function: this.#options.name,
        container: id,
        error: describeError(error),
      });
      this.#containers = this.#containers.filter((c) => c !== container);
    });
    this.#containers.push(container);
    return container;
  }
}
