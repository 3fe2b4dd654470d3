import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';

export interface DynamoDbLocal {
  endpoint: string;
  stop(): Promise<void>;
}

export const javaInstallHint =
  'DynamoDB Local needs Java 17 or later on PATH: on Debian or Ubuntu run `apt-get update && apt-get install -y openjdk-17-jre-headless`; elsewhere install any JDK 17+';

/** AWS's DynamoDB Local ships inside the amplify-dynamodb-simulator npm package (a devDependency). */
function emulatorDir(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('amplify-dynamodb-simulator/package.json')), 'emulator');
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts DynamoDB Local in memory on a free loopback port and waits until it answers. Fails fast, with
 * the install hint, when Java is missing.
 */
export async function startDynamoDbLocal(): Promise<DynamoDbLocal> {
  if (spawnSync('java', ['-version']).error !== undefined) throw new Error(javaInstallHint);
  const dir = emulatorDir();
  const port = await freePort();
  const child: ChildProcess = spawn(
    'java',
    [
      `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
      '-Xmx1g',
      '-jar',
      join(dir, 'DynamoDBLocal.jar'),
      '-inMemory',
      // One database whatever the caller's credentials and region: functions run by SAM sign with the
      // operator's own, the local runtime with fixed ones, and both must see the same table.
      '-sharedDb',
      '-port',
      String(port),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (data: Buffer) => {
    output += data.toString();
  });
  child.stderr?.on('data', (data: Buffer) => {
    output += data.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const deadline = Date.now() + 60_000;
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`DynamoDB Local exited with ${child.exitCode}: ${output}`);
      try {
        await client.send(new ListTablesCommand({}));
        break;
      } catch {
        if (Date.now() > deadline) throw new Error(`DynamoDB Local did not answer within 60 s: ${output}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  } finally {
    client.destroy();
  }
  return {
    endpoint,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}
