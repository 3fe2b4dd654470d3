import type { PluginExecutionMode } from '@middy/core';
import type { Context } from 'aws-lambda';
import type { ControlPlaneDeps } from '../lib/control-plane.ts';
import { once } from '../lib/once.ts';
import { type KindOptions, withMiddlewares } from './middlewares.ts';
import { type Observability, observability } from './observability.ts';
import { containerFromEnv } from './wiring.ts';

/**
 * One Lambda function: what it does with a container's control plane, and what kind of entry it is (an
 * API function names its edge middlewares too).
 */
export type FunctionDefinition<E, R> = KindOptions & {
  /** The function's name in lib/limits.ts (and the local runtime's containers). */
  name: string;
  /**
   * The work of one invocation, built once per container from its wired parts (store, queue, pools...)
   * and tools. A function builds only what it uses: the API builds the router and the services; a worker
   * imports none of them, so its bundle and its cold start do not carry the HTTP layer.
   */
  core: (container: ControlPlaneDeps, tools: Observability) => (event: E, context: Context) => Promise<R>;
  correlationId?: (event: E) => string | undefined;
};

/** A container's handler: the function's work inside the middleware stack (the local runtime builds these). */
export function handlerFor<E, R>(
  definition: FunctionDefinition<E, R>,
  container: ControlPlaneDeps,
  tools: Observability = observability,
) {
  return withMiddlewares(definition.core(container, tools), tools, definition);
}

/**
 * The exported Lambda handler: the middleware stack is built at module load (middy's response streaming
 * must register with the runtime then); the container's parts at the first invocation, once per container.
 */
export function lambdaEntry<E, R>(definition: FunctionDefinition<E, R>, executionMode?: PluginExecutionMode) {
  const work = once(async () => definition.core(await containerFromEnv(), observability));
  return withMiddlewares<E, R>(
    async (event, context) => (await work())(event, context),
    observability,
    definition,
    executionMode,
  );
}
