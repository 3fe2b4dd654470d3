import { isAbsolute, relative, resolve, sep } from 'node:path';
import { env } from '../../functions/environment.ts';
import type { QueueName } from '../../lib/queue/port.ts';

/** Where the local services listen, as `sam local invoke` needs them. */
export interface LocalServices {
  dynamodbEndpoint: string;
  tableName: string;
  sqsEndpoint: string;
  queueUrls: Record<QueueName, string>;
  dlqUrls: Record<QueueName, string>;
  adminKey: string;
}

/**
 * The `--env-vars` file for `sam local invoke` against the local services: under `Parameters`, so it
 * applies to every function of the template (SAM overrides only variables the template declares, which
 * is why the stack declares them all). No event bus locally (lifecycle events are not published) and the
 * admin key comes from the file instead of Secrets Manager. `host` replaces 127.0.0.1 in the endpoints
 * and queue URLs for a container that reaches the host by another name (Docker Desktop's
 * host.docker.internal); on Linux, `--docker-network host` keeps 127.0.0.1.
 */
export function samEnvironment(
  services: LocalServices,
  host = '127.0.0.1',
): { Parameters: Record<string, string> } {
  const onHost = (url: string) => url.replace('//127.0.0.1', `//${host}`).replace('//localhost', `//${host}`);
  return {
    Parameters: {
      AWS_ENDPOINT_URL_DYNAMODB: onHost(services.dynamodbEndpoint),
      AWS_ENDPOINT_URL_SQS: onHost(services.sqsEndpoint),
      [env.tableName]: services.tableName,
      [env.provisionQueueUrl]: onHost(services.queueUrls.provision),
      [env.terminateQueueUrl]: onHost(services.queueUrls.terminate),
      [env.operationsQueueUrl]: onHost(services.queueUrls.operations),
      [env.webhooksQueueUrl]: onHost(services.queueUrls.webhooks),
      [env.provisionDlqUrl]: onHost(services.dlqUrls.provision),
      [env.terminateDlqUrl]: onHost(services.dlqUrls.terminate),
      [env.operationsDlqUrl]: onHost(services.dlqUrls.operations),
      [env.eventBusName]: '',
      [env.adminKeySecretArn]: '',
      [env.adminKey]: services.adminKey,
    },
  };
}

/**
 * A file in this checkout that git does not ignore: the env file holds the admin key, and `.differently/`
 * (the data folder) and `env.json` (where earlier docs wrote it) are ignored.
 */
export function outsideIgnoredFolder(
  file: string,
  checkout = resolve(import.meta.dirname, '..', '..'),
): boolean {
  const inside = relative(checkout, resolve(file));
  if (inside === '' || inside.startsWith('..') || isAbsolute(inside)) return false;
  return !(inside === '.differently' || inside.startsWith(`.differently${sep}`) || inside === 'env.json');
}
