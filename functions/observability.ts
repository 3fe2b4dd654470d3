import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Log } from '../lib/log.ts';
import { metricsNamespace } from './environment.ts';
import { XRayTracer } from './tracing/xray-tracer.ts';

/**
 * The three tools, as one container holds them (one of each per container, like its clients): Powertools'
 * Logger and Metrics, and the X-Ray tracer of functions/tracing/.
 */
export interface Observability {
  logger: Logger;
  metrics: Metrics;
  tracer: XRayTracer;
}

/**
 * The tools of one function: its service name on every log line, metric and trace. The tracer is off
 * outside Lambda and under SAM (Powertools' rule, kept), so tests and the local runtime send no segments.
 */
export function observabilityFor(service: string): Observability {
  return {
    logger: new Logger({ serviceName: service }),
    metrics: new Metrics({ namespace: metricsNamespace, serviceName: service }),
    tracer: new XRayTracer({ serviceName: service }),
  };
}

/** The tools of this container: the function's name comes from POWERTOOLS_SERVICE_NAME on Lambda. */
export const observability: Observability = observabilityFor(
  process.env.POWERTOOLS_SERVICE_NAME ?? 'differently',
);

/** Powertools' Logger behind the lib Log port. */
export function powertoolsLog(base: Logger = observability.logger): Log {
  return {
    debug: (message, extra) => base.debug(message, extra ?? {}),
    info: (message, extra) => base.info(message, extra ?? {}),
    warn: (message, extra) => base.warn(message, extra ?? {}),
    error: (message, extra) => base.error(message, extra ?? {}),
  };
}
