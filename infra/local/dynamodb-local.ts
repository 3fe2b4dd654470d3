import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';

export interface DynamoDbLocal {
  endpoint: string;
  /** Where the tables are kept between runs; undefined when in memory. */
  dataDir: string | undefined;
  stop(): Promise<void>;
}

export interface DynamoDbLocalOptions {
  /**
   * Keep the tables in this folder (created if missing), so a restart finds them again. Without it the
   * tables live in memory and end with the process.
   */
  dataDir?: string;
}

/**
 * Runs java under a shell that watches its stdin: the runtime holds the other end of that pipe, so when
 * the runtime ends in any way (a clean stop closes it; a crash or kill -9 closes it with the process),
 * the shell kills java. No DynamoDB Local outlives the process that started it.
 */
// (A background job's stdin is /dev/null in sh, hence the copy of stdin on fd 3.)
const watchdog =
  'exec 3<&0; java "$@" </dev/null & pid=$!; (cat <&3 >/dev/null; kill $pid 2>/dev/null) & wait $pid';

export const javaInstallHint =
  'DynamoDB Local needs Java 17 or later on PATH: on Debian or Ubuntu run `apt-get update && apt-get install -y openjdk-17-jre-headless`; elsewhere install any JDK 17+';

/** A single-file Java program (run from source, Java 11+) that starts DynamoDB Local on 127.0.0.1 only. */
const loopbackLauncher = fileURLToPath(new URL('./dynamodb-local-loopback.java', import.meta.url));

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
 * Starts DynamoDB Local on a free port of 127.0.0.1 (and no other address), in memory or on disk (`dataDir`), with its telemetry
 * off, and waits until it answers. Fails fast, with the install hint, when Java is missing.
 */
export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}): Promise<DynamoDbLocal> {
  if (spawnSync('java', ['-version']).error !== undefined) throw new Error(javaInstallHint);
  const dir = emulatorDir();
  const port = await freePort();
  if (options.dataDir !== undefined) mkdirSync(options.dataDir, { recursive: true });
  // Its working folder: DynamoDB Local writes a metadata file there, which belongs with the data (or in
  // a temporary folder), never in the caller's checkout.
  const cwd = options.dataDir ?? mkdtempSync(join(tmpdir(), 'dynamodb-local-'));
  const child: ChildProcess = spawn(
    'sh',
    [
      '-c',
      watchdog,
      'sh',
      `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
      '-Xmx1g',
      // Its own main listens on every interface; this launcher binds the same server to 127.0.0.1.
      '-cp',
      `${join(dir, 'DynamoDBLocal.jar')}:${join(dir, 'DynamoDBLocal_lib', '*')}`,
      loopbackLauncher,
      ...(options.dataDir === undefined ? ['-inMemory'] : ['-dbPath', options.dataDir]),
      // One database whatever the caller's credentials and region: functions run by SAM sign with the
      // operator's own, the local runtime with fixed ones, and both must see the same table.
      '-sharedDb',
      '-disableTelemetry',
      '-port',
      String(port),
    ],
    { stdio: ['pipe', 'pipe', 'pipe'], cwd },
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
    child.stdin?.end();
    await exited;
    throw error;
  } finally {
    client.destroy();
  }
  return {
    endpoint,
    dataDir: options.dataDir,
    async stop() {
      if (child.exitCode === null) {
        // Closing the watchdog's stdin ends java, then the shell.
        child.stdin?.end();
        await exited;
      }
    },
  };
}
