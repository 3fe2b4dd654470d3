/**
 * Runs one invocation of a bundled Lambda function in this fresh process, as `sam local invoke` runs one
 * in a fresh container: the environment is already set by the caller, the module is loaded from the
 * bundle the template names (`index.<export>` in the asset directory), and the handler is called with
 * the event and a Lambda context. Response-streaming handlers get the runtime's `awslambda` API (the
 * metadata prelude, then the body). The outcome goes to a JSON file (stdout carries the function's logs).
 *
 *   node test/helpers/invoke-bundle.ts <asset dir> <Handler setting> <event file> <result file>
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';

const [assetDir = '', handlerSetting = '', eventFile = '', resultFile = ''] = process.argv.slice(2);
const [moduleName = 'index', exportName = 'handler'] = handlerSetting.split('.');

// What Lambda's Node runtime defines for response streaming (kept beside whatever else is on the global).
let prelude: unknown;
const streaming = {
  streamifyResponse: (handler: unknown) => handler,
  HttpResponseStream: {
    from(stream: Writable, metadata: unknown) {
      prelude = metadata;
      return stream;
    },
  },
};
const global = globalThis as { awslambda?: Record<string, unknown> };
global.awslambda = Object.assign(global.awslambda ?? {}, streaming);

const functionName = process.env.AWS_LAMBDA_FUNCTION_NAME ?? 'function';
const deadline = Date.now() + Number(process.env.AWS_LAMBDA_FUNCTION_TIMEOUT ?? '30') * 1000;
const context = {
  callbackWaitsForEmptyEventLoop: true,
  functionName,
  functionVersion: '$LATEST',
  invokedFunctionArn: `arn:aws:lambda:${process.env.AWS_REGION}:123456789012:function:${functionName}`,
  memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? '512',
  awsRequestId: randomUUID(),
  logGroupName: `/aws/lambda/${functionName}`,
  logStreamName: 'sam-like',
  getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
};

const event: unknown = JSON.parse(readFileSync(eventFile, 'utf8'));
const loaded = (await import(pathToFileURL(join(assetDir, `${moduleName}.mjs`)).href)) as Record<
  string,
  unknown
>;
const handler = loaded[exportName];
if (typeof handler !== 'function') throw new Error(`${moduleName}.mjs exports no function ${exportName}`);
try {
  if (handler.length >= 3 || exportName === 'streamHandler') {
    const chunks: Buffer[] = [];
    const responseStream = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        chunks.push(Buffer.from(chunk));
        callback();
      },
    });
    await handler(event, responseStream, context);
    writeFileSync(resultFile, JSON.stringify({ prelude, body: Buffer.concat(chunks).toString('utf8') }));
  } else {
    writeFileSync(resultFile, JSON.stringify({ result: await handler(event, context) }));
  }
} catch (error) {
  writeFileSync(resultFile, JSON.stringify({ error: String(error) }));
}
