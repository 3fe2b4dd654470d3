import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { bubblewrapAvailable } from '../../adapters/devhost/jail.ts';
import { env } from '../../functions/environment.ts';
import { parseConfigText } from '../../lib/config.ts';
import { isApiError } from '../../lib/errors.ts';
import { consoleLog } from './console-log.ts';
import { defaultLocalConfig, startLocalRuntime } from './runtime.ts';
import { outsideIgnoredFolder, samEnvironment } from './sam-env.ts';

const usage = `Usage: npm start -- [--config FILE] [--port N] [--store memory|dynamodb]

  --config FILE    JSON config (pools, templates, scheduler, api); default: dev mode with pools local and fake
  --port N         HTTP port on 127.0.0.1 (default: $PORT or 8080)
  --store KIND     memory (default) or dynamodb: DynamoDB Local (needs Java 17+), started here unless
                   AWS_ENDPOINT_URL_DYNAMODB names a running one
  --data-dir DIR   with --store dynamodb: where its tables (and the admin key) are kept across restarts
                   (default .differently/dynamodb); unfinished work is requeued at start
  --in-memory      with --store dynamodb: keep nothing after a stop
  --sam-env FILE   with --store dynamodb: write the --env-vars file for sam local invoke (docs/local-testing.md);
                   it holds the admin key: .differently/sam-env.json is inside the ignored data folder
  --sam-host HOST  the host name SAM's containers reach this machine by (default 127.0.0.1, for
                   --docker-network host; host.docker.internal on Docker Desktop)
  --containers N   simulated Lambda containers per function (default 2): each cold-started on its own,
                   sharing only the store, the queues and the backends, as on AWS
  --help           this text

Environment: ${env.adminKey} sets the bootstrap admin key (otherwise one is generated and printed).`;

/** Where `--store dynamodb` keeps its tables by default: beside the project, ignored by git. */
const defaultDataDir = '.differently/dynamodb';

/** The admin key kept in the data folder (made on first use); none without a data folder. */
async function lastingAdminKey(dataDir: string | undefined): Promise<string | undefined> {
  if (dataDir === undefined) return undefined;
  const file = join(dataDir, 'admin-key');
  const kept = await readFile(file, 'utf8').catch(() => '');
  if (kept.trim().length >= 16) return kept.trim();
  await mkdir(dataDir, { recursive: true });
  const key = `dadm_${randomBytes(24).toString('base64url')}`;
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  return key;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      config: { type: 'string' },
      port: { type: 'string' },
      store: { type: 'string', default: 'memory' },
      containers: { type: 'string', default: '2' },
      'data-dir': { type: 'string' },
      'in-memory': { type: 'boolean' },
      'sam-env': { type: 'string' },
      'sam-host': { type: 'string', default: '127.0.0.1' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help === true) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  const port = Number(values.port ?? process.env.PORT ?? '8080');
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port must be 0-65535, not ${values.port}`);
  const config =
    values.config === undefined
      ? defaultLocalConfig()
      : parseConfigText(await readFile(values.config, 'utf8'), values.config);
  const containers = Number(values.containers);
  if (!Number.isInteger(containers) || containers < 1 || containers > 16)
    throw new Error(`--containers must be 1-16, not ${values.containers}`);
  if (values.store !== 'memory' && values.store !== 'dynamodb') {
    throw new Error(`--store must be memory or dynamodb, not ${values.store}`);
  }
  if (values['sam-env'] !== undefined && values.store !== 'dynamodb')
    throw new Error(
      '--sam-env needs --store dynamodb: functions run by SAM share the table, not this process',
    );
  // The AWS SDK's own setting: an already running DynamoDB Local instead of starting one.
  const endpoint = process.env.AWS_ENDPOINT_URL_DYNAMODB;
  const external = endpoint !== undefined && endpoint !== '';
  // DynamoDB Local started here keeps its tables on disk unless asked not to.
  const dataDir =
    values.store === 'dynamodb' && !external && values['in-memory'] !== true
      ? resolve(values['data-dir'] ?? defaultDataDir)
      : undefined;
  const fromEnv = process.env[env.adminKey];
  // With data that lasts, so does the admin key (kept beside the data, readable by this user only).
  const adminKey = fromEnv !== undefined && fromEnv !== '' ? fromEnv : await lastingAdminKey(dataDir);
  const runtime = await startLocalRuntime({
    config,
    port,
    storeKind: values.store,
    containers,
    ...(external && { dynamodbEndpoint: endpoint }),
    ...(dataDir !== undefined && { dataDir }),
    log: consoleLog(),
    ...(adminKey !== undefined && { adminKey }),
  });
  const keyLine = fromEnv ? `(from ${env.adminKey})` : runtime.adminKey;
  const storeLine =
    values.store === 'memory'
      ? 'memory (nothing is kept after a stop)'
      : external
        ? `dynamodb at ${endpoint}`
        : dataDir === undefined
          ? 'dynamodb, in memory (--in-memory: nothing is kept after a stop)'
          : `dynamodb, data in ${dataDir} (kept across restarts; --in-memory to keep nothing)`;
  const samEnvFile = values['sam-env'];
  if (samEnvFile !== undefined && runtime.table !== undefined) {
    const services = {
      dynamodbEndpoint: runtime.table.endpoint,
      tableName: runtime.table.tableName,
      sqsEndpoint: runtime.sqs.endpoint,
      queueUrls: runtime.sqs.urls,
      dlqUrls: runtime.sqs.dlqUrls,
      adminKey: runtime.adminKey,
    };
    await mkdir(dirname(resolve(samEnvFile)), { recursive: true });
    await writeFile(
      samEnvFile,
      `${JSON.stringify(samEnvironment(services, values['sam-host']), null, 2)}\n`,
      {
        mode: 0o600,
      },
    );
  }
  process.stdout.write(
    [
      '',
      `Differently is running at ${runtime.url}`,
      `  console:   ${runtime.url}/console/ (open it in a browser and sign in with an API key)`,
      `  admin key: ${keyLine}`,
      `  pools:     ${config.pools.map((p) => `${p.name} (${p.adapter})`).join(', ') || 'none'}`,
      `  store:     ${storeLine}`,
      `  functions: ${containers} simulated Lambda containers each; API Gateway's 29 s and Lambda's 6 MB enforced`,
      ...(samEnvFile === undefined
        ? []
        : [
            `  sam env:   ${samEnvFile} (sam local invoke --env-vars ${samEnvFile}); it holds the admin key`,
            ...(outsideIgnoredFolder(samEnvFile)
              ? [
                  '  WARNING:   that file is in this checkout outside .differently/ (which git ignores): keep it out of',
                  '             version control, or write it to .differently/sam-env.json',
                ]
              : []),
          ]),
      ...(config.pools.some((pool) => pool.adapter === 'devhost') && !bubblewrapAvailable()
        ? [
            '  WARNING:   bubblewrap (bwrap) is missing: devhost commands run as host processes that see this',
            `             machine's files and processes${process.getuid?.() === 0 ? ', as root' : ''} (apt-get install bubblewrap)`,
          ]
        : []),
      '',
      'Try:',
      `  curl -s ${runtime.url}/v1/health`,
      `  curl -s -X POST ${runtime.url}/v1/admin/orgs -H "Authorization: Bearer ${fromEnv ? `$${env.adminKey}` : runtime.adminKey}" -H 'content-type: application/json' -d '{"name":"acme"}'`,
      '',
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`\n${signal}: stopping...\n`);
    runtime.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`error while stopping: ${(error as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((error: unknown) => {
  const message = isApiError(error) || error instanceof Error ? error.message : String(error);
  process.stderr.write(`differently: ${message}\n`);
  process.exit(1);
});
