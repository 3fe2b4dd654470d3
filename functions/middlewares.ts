import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy, { type MiddlewareObj, type MiddyfiedHandler, type PluginExecutionMode } from '@middy/core';
import type { Context } from 'aws-lambda';
import { describeError } from '../lib/log.ts';
import type { Observability } from './observability.ts';

/**
 * The middlewares at the API's edge, after the common ones (functions/http-edge.ts). An API function
 * names them itself, so that only the API's bundles load them, not every worker's.
 */
export type HttpEdge = (logger: Observability['logger']) => MiddlewareObj[];

/** What kind of entry point a function is (its cross-cutting concerns follow from it), and for the API its edge. */
export type KindOptions = { kind: 'http'; edge: HttpEdge } | { kind: 'worker' | 'scheduled'; edge?: never };

export type MiddlewareOptions<E> = KindOptions & {
  /** The id every log line of the invocation carries (API Gateway's request id for the API). */
  correlationId?: (event: E) => string | undefined;
};

/** The id of the invocation's caller request on every log line, so one request's lines can be found. */
function correlation<E>(
  logger: Observability['logger'],
  id: (event: E) => string | undefined,
): MiddlewareObj<E> {
  return {
    name: 'correlation-id',
    before: (request) => {
      const value = id(request.event);
      if (value !== undefined) logger.setCorrelationId(value);
    },
  };
}

/**
 * Workers and schedules fail loudly (Lambda retries, then the DLQ or the schedule's DLQ has it): the
 * error is logged once with its cause, then rethrown by middy.
 */
function logFailure(logger: Observability['logger']): MiddlewareObj {
  return {
    name: 'log-failure',
    onError: (request) => {
      logger.error('invocation failed', { error: describeError(request.error) });
    },
  };
}

/**
 * The stack every entry point runs in, on Lambda and in the local runtime alike: the Lambda context on
 * every log line (request id, cold start), the trace segment with its ColdStart annotation, metrics
 * flushed once per invocation (with a ColdStart metric), the correlation id, and for the API the error
 * envelope and the security headers every response carries.
 */
export function withMiddlewares<E, R>(
  core: (event: E, context: Context) => Promise<R>,
  tools: Observability,
  options: MiddlewareOptions<E>,
  executionMode?: PluginExecutionMode,
): MiddyfiedHandler<E, R> {
  const handler = middy<E, R>(executionMode === undefined ? {} : { executionMode })
    .use(injectLambdaContext(tools.logger, { resetKeys: true }))
    .use(logMetrics(tools.metrics, { captureColdStartMetric: true }));
  if (options.correlationId !== undefined) handler.use(correlation(tools.logger, options.correlationId));
  if (options.kind === 'http') handler.use(options.edge(tools.logger));
  else handler.use(logFailure(tools.logger));
  // The invocation's subsegment wraps the work itself (an AsyncLocalStorage scope has to wrap a call,
  // which a middy hook cannot); the response is not put on the trace, it can carry command output.
  const handlerName = process.env._HANDLER ?? 'index.handler';
  return handler.handler((event, context) =>
    tools.tracer.traceInvocation(handlerName, () => core(event, context)),
  );
}
