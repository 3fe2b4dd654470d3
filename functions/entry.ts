import type { PluginExecutionMode } from '@middy/core';
import type { Context } from 'aws-lambda';
import type { ControlPlane } from '../lib/control-plane.ts';
import { type EntryKind, withMiddlewares } from './middlewares.ts';
import { type Observability, observability } from './observability.ts';
import { controlPlaneFromEnv, once } from './wiring.ts';

/** One Lambda function: what it does with a container's control plane, and what kind of entry it is. */
export interface FunctionDefinition<E, R> {
  /** The function's name in lib/limits.ts (and the local runtime's containers). */
  name: string;
  kind: EntryKind;
  /** The work of one invocation, given the container's control plane and tools. */
  core: (plane: ControlPlane, tools: Observability) => (event: E, context: Context) => Promise<R>;
  correlationId?: (event: E) => string | undefined;
}

/** A container's handler: the function's work inside the middleware stack (the local runtime builds these). */
export function handlerFor<E, R>(
  definition: FunctionDefinition<E, R>,
  plane: ControlPlane,
  tools: Observability = observability,
) {
  return withMiddlewares(definition.core(plane, tools), tools, {
    kind: definition.kind,
    ...(definition.correlationId !== undefined && { correlationId: definition.correlationId }),
  });
}

/**
 * The exported Lambda handler: the middleware stack is built at module load (middy's response streaming
 * must register with the runtime then); the control plane at the first invocation, once per container.
 */
export function lambdaEntry<E, R>(definition: FunctionDefinition<E, R>, executionMode?: PluginExecutionMode) {
  const work = once(async () => definition.core(await controlPlaneFromEnv(), observability));
  return withMiddlewares<E, R>(
    async (event, context) => (await work())(event, context),
    observability,
    {
      kind: definition.kind,
      ...(definition.correlationId !== undefined && { correlationId: definition.correlationId }),
    },
    executionMode,
  );
}
