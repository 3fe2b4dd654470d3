/**
 * What `sam local invoke -t cdk.out/Differently.template.json <Function> -e events/<file>.json --env-vars
 * env.json` does, without Docker (which SAM needs and CI lacks): synthesize the app with bundling, take
 * each function's Handler, bundle and declared environment from the template, overlay the env file
 * `npm start -- --sam-env` writes (infra/local/sam-env.ts, documented in docs/local-testing.md), and run
 * each invocation in a fresh Node process against DynamoDB Local, the embedded SQS server and an
 * OpenSandbox server faithful to its published API.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { App } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import * as z from 'zod';
import { wireContainer } from '../../functions/wiring.ts';
import { buildApp } from '../../infra/cdk/app.ts';
import { type EmbeddedSqs, startEmbeddedSqs } from '../../infra/local/embedded-sqs.ts';
import { samEnvironment } from '../../infra/local/sam-env.ts';
import { parseConfig } from '../../lib/config.ts';
import { type ControlPlane, createControlPlane } from '../../lib/control-plane.ts';
import { silentLog } from '../../lib/log.ts';
import { SqsWorkQueue } from '../../lib/queue/sqs.ts';
import { queueSettings } from '../../lib/scheduler/backoff.ts';
import { documentClient, localDynamoDbClient } from '../../lib/store/dynamodb/client.ts';
import { dynamoDbStore } from '../../lib/store/dynamodb/dynamodb-store.ts';
import { ensureTable } from '../../lib/store/dynamodb/table.ts';
import { OpenSandboxFake } from '../fakes/opensandbox-server.ts';
import { cdkJson } from '../helpers/cdk-json.ts';
import { jsonObject, parseJson } from '../helpers/json.ts';
import { orgPrincipal } from '../helpers/records.ts';

const run = promisify(execFile);
const eventsDir = new URL('../../events/', import.meta.url);
const runner = new URL('../helpers/invoke-bundle.ts', import.meta.url).pathname;

/** The template's resources; a function's properties are read as `functionProperties`. */
const templateSchema = z.object({
  Resources: z.record(
    z.string(),
    z.object({
      Type: z.string(),
      Properties: z.unknown(),
      Metadata: z.record(z.string(), z.unknown()).optional(),
    }),
  ),
});
const functionProperties = z.object({
  Handler: z.string(),
  Timeout: z.number(),
  Environment: z.object({ Variables: z.record(z.string(), z.unknown()) }),
});
/** What the bundle runner writes (test/helpers/invoke-bundle.ts). */
const outcomeSchema = z.object({
  result: z.unknown().optional(),
  prelude: z.object({ statusCode: z.number(), headers: z.record(z.string(), z.string()) }).optional(),
  body: z.string().optional(),
  error: z.string().optional(),
});
/** What an API Gateway proxy integration takes from the api function. */
const apiResult = z.object({
  statusCode: z.number(),
  headers: z.record(z.string(), z.string()).optional(),
  body: z.string(),
});
const samEnvFile = z.object({ Parameters: z.record(z.string(), z.string()) });
/** The tools an MCP `tools/list` answers, as far as the test reads them. */
const toolList = z.object({
  result: z.object({
    tools: z.array(
      z.object({
        name: z.string(),
        inputSchema: z.object({
          properties: z.record(z.string(), z.record(z.string(), z.unknown())),
          required: z.array(z.string()).optional(),
        }),
      }),
    ),
  }),
});
/** An MCP `tools/call` answer. */
const toolCall = z.object({
  result: z.object({
    content: z.array(z.object({ type: z.string(), text: z.string().optional() })),
    isError: z.boolean().optional(),
  }),
});

/** The JSON-RPC answer of an MCP POST: the body itself, or the last `data:` line of its SSE stream. */
function jsonRpcAnswer(body: string | undefined): string {
  const events = (body ?? '').split('\n').filter((line) => line.startsWith('data: '));
  return events.length === 0 ? (body ?? '') : (events.at(-1) ?? '').slice('data: '.length);
}

/** A function of the synthesized template, as SAM reads it. */
interface Invocable {
  logicalId: string;
  handler: string;
  assetDir: string;
  timeout: number;
  variables: Record<string, unknown>;
}

describe('sam local invoke, without Docker: every function of the synthesized template with every events/ file', () => {
  const work = mkdtempSync(join(tmpdir(), 'sam-like-'));
  const tableName = `sam-${Date.now()}`;
  const opensandbox = new OpenSandboxFake();
  let sqs: EmbeddedSqs;
  let functions: Record<string, Invocable>;
  let samEnv: Record<string, string>;
  let operator: ControlPlane;
  const used = new Set<string>();

  beforeAll(async () => {
    await opensandbox.start();
    const raw = {
      // Nothing runs the workers here but the invocations below: the API answers 202 at once.
      api: { operationWaitSeconds: 0 },
      pools: [
        {
          name: 'osb',
          adapter: 'opensandbox',
          maxConcurrency: 10,
          // kubernetes: stop and start are offered (the sample operations event is a stop).
          config: { apiURL: opensandbox.url, runtime: 'kubernetes' },
        },
      ],
    };
    const config = parseConfig(raw);
    const configPath = join(work, 'differently.json');
    writeFileSync(configPath, JSON.stringify(raw));
    sqs = await startEmbeddedSqs(queueSettings(config));
    const dynamodb = inject('dynamodbEndpoint');
    const client = localDynamoDbClient(dynamodb);
    await ensureTable(client, tableName);
    const store = dynamoDbStore({ client: documentClient(client), tableName });
    operator = createControlPlane(
      await wireContainer({
        config,
        store,
        queue: new SqsWorkQueue(sqs.client, sqs.urls),
        log: silentLog,
      }),
    );
    const adminKey = `dadm_${'k'.repeat(32)}`;
    samEnv = samEnvironment({
      dynamodbEndpoint: dynamodb,
      tableName,
      sqsEndpoint: sqs.endpoint,
      queueUrls: sqs.urls,
      dlqUrls: sqs.dlqUrls,
      adminKey,
    }).Parameters;

    // `npx cdk synth`: the real bundles, with cdk.json's context.
    const outdir = join(work, 'cdk.out');
    // The CLI asks for asset metadata (SAM finds each bundle by it); an App made here must too.
    const app = new App({
      outdir,
      context: { ...cdkJson.context, config: configPath, 'aws:cdk:enable-asset-metadata': true },
    });
    buildApp(app);
    app.synth();
    const template = parseJson(
      templateSchema,
      readFileSync(join(outdir, 'Differently.template.json'), 'utf8'),
    );
    functions = {};
    for (const [logicalId, resource] of Object.entries(template.Resources)) {
      if (resource.Type !== 'AWS::Lambda::Function') continue;
      const asset = resource.Metadata?.['aws:asset:path'];
      if (typeof asset !== 'string') continue;
      const name = logicalId.replace(/Function[0-9A-F]{8}$/, '');
      const properties = functionProperties.parse(resource.Properties);
      functions[name] = {
        logicalId,
        handler: properties.Handler,
        assetDir: join(outdir, asset),
        timeout: properties.Timeout,
        variables: properties.Environment.Variables,
      };
    }
  }, 180_000);

  afterAll(async () => {
    await sqs?.stop();
    await opensandbox.stop();
  });

  /** One `sam local invoke <Function> -e events/<file> --env-vars env.json`, in a fresh process. */
  async function invoke(fn: string, eventFile: string, ids: Record<string, string> = {}) {
    const target = functions[fn];
    if (target === undefined) throw new Error(`no function ${fn} in the template`);
    used.add(eventFile);
    let text = readFileSync(new URL(eventFile, eventsDir), 'utf8');
    for (const [from, to] of Object.entries(ids)) text = text.replaceAll(from, to);
    const eventPath = join(work, `${fn}-${eventFile}`);
    writeFileSync(eventPath, text);
    const resultPath = join(work, `${fn}-${Date.now()}-result.json`);
    // The template's variables (a reference to another resource is resolved by SAM to nothing usable:
    // the env file must set it), then the env file's, then what SAM's container adds.
    const declared = Object.fromEntries(
      Object.entries(target.variables).map(([name, value]) => [name, typeof value === 'string' ? value : '']),
    );
    const overlaid = {
      ...declared,
      ...Object.fromEntries(Object.entries(samEnv).filter(([name]) => name in declared)),
    };
    const environment: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      ...overlaid,
      // SAM mounts the bundle at /var/task.
      DIFFERENTLY_CONFIG: String(overlaid.DIFFERENTLY_CONFIG).replace('/var/task', target.assetDir),
      AWS_REGION: 'eu-west-1',
      AWS_DEFAULT_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_SAM_LOCAL: 'true',
      AWS_LAMBDA_FUNCTION_NAME: target.logicalId,
      AWS_LAMBDA_FUNCTION_TIMEOUT: String(target.timeout),
    };
    const { stdout, stderr } = await run(
      process.execPath,
      [runner, target.assetDir, target.handler, eventPath, resultPath],
      {
        env: environment,
        timeout: 120_000,
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    const outcome = parseJson(outcomeSchema, readFileSync(resultPath, 'utf8'));
    if (outcome.error !== undefined) throw new Error(`${fn} failed: ${outcome.error}\n${stdout}${stderr}`);
    return { ...outcome, logs: `${stdout}${stderr}` };
  }

  it('writes the env file docs/local-testing.md shows, and the template declares every variable in it', () => {
    const doc = readFileSync(new URL('../../docs/local-testing.md', import.meta.url), 'utf8');
    const block = /```json\n(\{\n {2}"Parameters"[\s\S]*?)```/.exec(doc)?.[1] ?? '{}';
    const documented = parseJson(samEnvFile, block);
    expect(Object.keys(documented.Parameters).sort()).toEqual(Object.keys(samEnv).sort());
    for (const fn of Object.values(functions))
      for (const name of Object.keys(samEnv))
        expect(Object.keys(fn.variables), `${fn.logicalId} ${name}`).toContain(name);
    expect(Object.keys(functions).sort()).toEqual(
      [
        'Api',
        'ApiStream',
        'Operations',
        'PoolRefresh',
        'Provision',
        'Reconcile',
        'Sweep',
        'Terminate',
        'Webhooks',
      ].sort(),
    );
  });

  it('runs a sandbox through api, provision, exec (buffered and streamed), stop, operations and terminate, then the three schedules', async () => {
    const org = await operator.tenancy.createOrg({ name: 'sam' });
    const { key } = await operator.tenancy.createKey(org.id, { name: 'sam', role: 'member' });
    const createEvent = readFileSync(new URL('api-create-sandbox.json', eventsDir), 'utf8');
    const exampleKey = /Bearer ([^"]+)"/.exec(createEvent)?.[1] ?? '';
    const provisionEvent = readFileSync(new URL('provision-sqs.json', eventsDir), 'utf8');
    const exampleSandbox = /sbx_[0-9A-Z]{26}/.exec(provisionEvent)?.[0] ?? '';
    const exampleOrg = /org_[0-9A-Z]{26}/.exec(provisionEvent)?.[0] ?? '';

    const createdCall = await invoke('Api', 'api-create-sandbox.json', { [exampleKey]: key });
    const created = apiResult.parse(createdCall.result);
    expect(created.statusCode, createdCall.logs).toBe(202);
    expect(created.headers).toMatchObject({ 'X-Content-Type-Options': 'nosniff' });
    const sandbox = parseJson(z.object({ id: z.string(), status: z.string() }), created.body);
    expect(sandbox.status).toBe('queued');
    const ids = { [exampleKey]: key, [exampleSandbox]: sandbox.id, [exampleOrg]: org.id };

    expect((await invoke('Provision', 'provision-sqs.json', ids)).result).toEqual({ batchItemFailures: [] });
    expect((await operator.store.getSandbox(org.id, sandbox.id))?.status).toBe('running');

    const exec = apiResult.parse((await invoke('Api', 'api-exec.json', ids)).result);
    expect(exec.statusCode, exec.body).toBe(200);
    expect(JSON.parse(exec.body)).toMatchObject({ exitCode: 0 });
    const streamed = await invoke('ApiStream', 'api-exec.json', ids);
    expect(streamed.prelude?.statusCode).toBe(200);
    const lines = (streamed.body ?? '')
      .trim()
      .split('\n')
      .map((line) => parseJson(jsonObject, line));
    // Without ?stream=1 the exec route answers one JSON document, through the streaming function still.
    expect(lines).toEqual([expect.objectContaining({ exitCode: 0, stdout: 'hi\n' })]);

    // The OpenAPI document as bundled: the committed one (a chunk imported on its first request), not rebuilt.
    const documentCall = await invoke('Api', 'api-openapi.json');
    const document = apiResult.parse(documentCall.result);
    expect(document.statusCode, documentCall.logs).toBe(200);
    const committed = readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8');
    expect(parseJson(jsonObject, document.body)).toEqual(parseJson(jsonObject, committed));

    // The web console as bundled: the page from the files beside the bundle, under the console's own
    // policy (the edge's security headers keep it), and the script it names.
    const consoleCall = await invoke('Api', 'api-console.json');
    const page = apiResult.extend({ isBase64Encoded: z.boolean() }).parse(consoleCall.result);
    expect(page.statusCode, consoleCall.logs).toBe(200);
    const html = page.isBase64Encoded ? Buffer.from(page.body, 'base64').toString('utf8') : page.body;
    const nonce = /name="style-nonce" content="([^"]+)"/.exec(html)?.[1];
    expect(page.headers?.['Content-Security-Policy']).toContain(`style-src 'self' 'nonce-${nonce}'`);
    expect(page.headers?.['Content-Security-Policy']).toContain("script-src 'self'");
    const script = /src="(assets\/app-[^"]+\.js)"/.exec(html)?.[1] ?? '';
    expect(existsSync(join(functions.Api?.assetDir ?? '', 'console', script)), script).toBe(true);

    // The MCP endpoint as bundled: the MCP SDK runs on its own copy of zod (infra/function-bundle.ts), which
    // must read the routes' schemas (built with lib/zod.ts) for the tool list and check a call with them.
    const listed = await invoke('ApiStream', 'api-mcp-tools-list.json', ids);
    expect(listed.prelude?.statusCode, listed.logs).toBe(200);
    const tools = parseJson(toolList, jsonRpcAnswer(listed.body)).result.tools;
    const execTool = tools.find((tool) => tool.name === 'exec');
    expect(execTool?.inputSchema.required).toEqual(expect.arrayContaining(['id']));
    expect(Object.keys(execTool?.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining(['id', 'command', 'args', 'cwd']),
    );
    // A description given with lib/zod.ts reaches the MCP SDK's JSON Schema through zod's shared registry.
    expect(tools.find((tool) => tool.name === 'create_sandbox')?.inputSchema.properties.wait).toMatchObject({
      description: 'Wait until the sandbox has settled (running or failed)',
    });
    const ran = await invoke('ApiStream', 'api-mcp-exec.json', ids);
    expect(ran.prelude?.statusCode, ran.logs).toBe(200);
    const ranResult = parseJson(toolCall, jsonRpcAnswer(ran.body)).result;
    expect(ranResult.isError ?? false).toBe(false);
    expect(ranResult.content.map((part) => part.text).join('')).toContain('hi');
    // The same call without a command: the route's own check (exactly one of command or args) refuses it.
    const refused = await invoke('ApiStream', 'api-mcp-exec.json', {
      ...ids,
      // The JSON body as it stands, escaped, inside the event file's JSON.
      '\\"command\\":\\"echo hi\\"': '\\"cwd\\":\\"/work\\"',
    });
    const refusedResult = parseJson(toolCall, jsonRpcAnswer(refused.body)).result;
    expect(refusedResult.isError).toBe(true);
    expect(refusedResult.content.map((part) => part.text).join('')).toContain(
      'send exactly one of command (run by /bin/sh -c) or args (run directly)',
    );

    await operator.operations.lifecycle(orgPrincipal(org.id), sandbox.id, 'stop');
    expect((await invoke('Operations', 'operations-sqs.json', ids)).result).toEqual({
      batchItemFailures: [],
    });
    expect((await operator.store.getSandbox(org.id, sandbox.id))?.status).toBe('stopped');

    await operator.sandboxes.delete(orgPrincipal(org.id), sandbox.id);
    expect((await invoke('Terminate', 'terminate-sqs.json', ids)).result).toEqual({ batchItemFailures: [] });
    expect((await operator.store.getSandbox(org.id, sandbox.id))?.status).toBe('terminated');

    expect((await invoke('Sweep', 'sweep-schedule.json')).result).toMatchObject({ expired: 0, skipped: 0 });
    expect((await invoke('Reconcile', 'reconcile-schedule.json')).result).toMatchObject({
      ran: true,
      pools: [expect.objectContaining({ pool: 'osb', orphansDeleted: 0 })],
    });
    expect((await invoke('PoolRefresh', 'pool-refresh-schedule.json')).result).toEqual({
      pools: [{ pool: 'osb', healthy: true, reason: null }],
      // No pool keeps a warm target: the refill ran and had nothing to do.
      warm: { ran: true, targets: [], hourlyCost: 0 },
    });
    // Every sample event was used: a new one without a case here fails.
    expect([...used].sort()).toEqual(
      readdirSync(eventsDir)
        .filter((f) => f.endsWith('.json'))
        .sort(),
    );
  }, 300_000);

  it('npm start -- --store dynamodb --sam-env FILE writes that file for the running services', async () => {
    const file = join(work, 'env.json');
    const child = spawn(
      process.execPath,
      ['infra/local/main.ts', '--store', 'dynamodb', '--port', '0', '--sam-env', file],
      {
        cwd: new URL('../../', import.meta.url).pathname,
        env: { ...process.env, AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint') },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    try {
      const deadline = Date.now() + 60_000;
      while (!output.includes('Press Ctrl-C') && Date.now() < deadline && child.exitCode === null)
        await new Promise((resolve) => setTimeout(resolve, 100));
      expect(output).toContain(`sam env:   ${file}`);
      expect(existsSync(file)).toBe(true);
      const written = parseJson(samEnvFile, readFileSync(file, 'utf8'));
      expect(written.Parameters).toMatchObject({
        AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
        AWS_ENDPOINT_URL_SQS: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+/),
        DIFFERENTLY_TABLE_NAME: 'differently',
        DIFFERENTLY_PROVISION_QUEUE_URL: expect.stringContaining('differently-provision'),
        DIFFERENTLY_ADMIN_KEY: expect.stringMatching(/^dadm_/),
      });
      expect(output).toContain(written.Parameters.DIFFERENTLY_ADMIN_KEY);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
  }, 90_000);
});
