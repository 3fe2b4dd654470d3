import type { Config } from './config.ts';
import { awsLimits } from './limits.ts';
import { queueSettings } from './scheduler/backoff.ts';

export type FunctionName =
  | 'api'
  | 'apiStream'
  | 'provision'
  | 'terminate'
  | 'operations'
  | 'webhooks'
  | 'sweep'
  | 'reconcile'
  | 'poolRefresh';

/**
 * Each function's timeout, in seconds. The api function outlives API Gateway's 29 s by a second so the
 * gateway, not Lambda, ends a slow request; the workers' come from their queues' settings.
 */
export function functionTimeouts(config: Config): Record<FunctionName, number> {
  const queues = queueSettings(config);
  return {
    api: awsLimits.apiIntegrationTimeoutSeconds + 1,
    apiStream: awsLimits.apiStreamIntegrationTimeoutSeconds,
    provision: queues.provision.workerTimeoutSeconds,
    terminate: queues.terminate.workerTimeoutSeconds,
    operations: queues.operations.workerTimeoutSeconds,
    webhooks: queues.webhooks.workerTimeoutSeconds,
    sweep: 300,
    reconcile: 300,
    // Probes run in parallel, each bounded by its own timeout; then the warm refill's Creates, each bounded
    // by the provision timeout (lib/warm/refill.ts is given that plus 30 s).
    poolRefresh: Math.min(900, config.scheduler.provisionTimeoutSeconds + 60),
  };
}
