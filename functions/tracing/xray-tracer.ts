import { AsyncLocalStorage } from 'node:async_hooks';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { getXrayTraceDataFromEnv } from '@aws-lambda-powertools/commons/utils/env';
import { isThrottlingError } from '@smithy/core/retry';
import type { BuildMiddleware, MiddlewareStack, SdkError } from '@smithy/types';
import { type AnnotationValue, Subsegment } from './subsegment.ts';
import { daemonAddress, XRayDaemonClient } from './xray-daemon.ts';

export interface XRayTracerOptions {
  /** The `Service` annotation of every invocation's subsegment. */
  serviceName: string;
  /** Unset: on when running on Lambda and not under SAM (`tracingEnabledByEnvironment`). */
  enabled?: boolean;
  /** Unset: AWS_XRAY_DAEMON_ADDRESS, as Lambda sets it. */
  daemon?: XRayDaemonClient;
}

/**
 * On Lambda (AWS_EXECUTION_ENV set) and not under `sam local` (AWS_SAM_LOCAL), as Powertools' Tracer
 * decides; whether an invocation is traced is then the trace header's `Sampled` flag, which Lambda sets
 * from the function's tracing mode and X-Ray's sampling.
 */
export function tracingEnabledByEnvironment(environment: NodeJS.ProcessEnv = process.env): boolean {
  return environment.AWS_EXECUTION_ENV !== undefined && environment.AWS_SAM_LOCAL === undefined;
}

/** What undici publishes on its diagnostics channels for each request fetch() makes. */
interface UndiciRequest {
  origin: string;
  method: string;
  path: string;
}

function undiciRequest(message: unknown): UndiciRequest | undefined {
  if (typeof message !== 'object' || message === null || !('request' in message)) return undefined;
  const { request } = message;
  if (typeof request !== 'object' || request === null) return undefined;
  const { origin, method, path } = request as Partial<Record<keyof UndiciRequest, unknown>>;
  return typeof origin === 'string' && typeof method === 'string' && typeof path === 'string'
    ? (request as UndiciRequest)
    : undefined;
}

function undiciStatus(message: unknown): number | undefined {
  if (typeof message !== 'object' || message === null || !('response' in message)) return undefined;
  const { response } = message;
  if (typeof response !== 'object' || response === null || !('statusCode' in response)) return undefined;
  return typeof response.statusCode === 'number' ? response.statusCode : undefined;
}

/** The SDK's response metadata, on a command's output and on a service error alike. */
interface ResponseMetadata {
  httpStatusCode?: number;
  requestId?: string;
  attempts?: number;
}

function metadataOf(value: unknown): ResponseMetadata {
  if (typeof value !== 'object' || value === null || !('$metadata' in value)) return {};
  const { $metadata } = value;
  return typeof $metadata === 'object' && $metadata !== null ? ($metadata as ResponseMetadata) : {};
}

/** A refusal to go faster, by the SDK's own classification (throttling codes, 429, the retryable trait). */
function isThrottling(error: unknown): boolean {
  return isSdkError(error) && isThrottlingError(error);
}

/** An error as the SDK throws it: an Error whose cause, if any, is one too. */
function isSdkError(error: unknown): error is SdkError {
  return error instanceof Error && (error.cause === undefined || error.cause instanceof Error);
}

/** The resource a DynamoDB or SQS call names, as X-Ray's AWS subsegments record it. */
function resourceOf(input: unknown): Record<string, string> {
  if (typeof input !== 'object' || input === null) return {};
  const fields: Record<string, string> = {};
  if ('TableName' in input && typeof input.TableName === 'string') fields.table_name = input.TableName;
  if ('QueueUrl' in input && typeof input.QueueUrl === 'string') fields.queue_url = input.QueueUrl;
  return fields;
}

const undiciChannels = {
  create: 'undici:request:create',
  headers: 'undici:request:headers',
  error: 'undici:request:error',
} as const;

/**
 * X-Ray tracing of an invocation, written over the daemon's UDP protocol instead of through the X-Ray SDK,
 * which with Powertools' Tracer was a fifth of a function's cold start (docs/performance.md). It records
 * what the functions' traces showed before: the handler's subsegment (`## <handler>`, annotated ColdStart
 * and Service), each AWS SDK call (one subsegment per call, retries counted, the X-Amzn-Trace-Id header
 * sent so the callee's segment joins the trace), each backend call the wiring wraps, and each fetch()
 * request beneath it (host, method, URL without its query, status). The current subsegment follows the
 * async flow in an AsyncLocalStorage, so concurrent work nests correctly.
 */
export class XRayTracer {
  readonly serviceName: string;
  readonly #enabled: boolean;
  readonly #daemon: XRayDaemonClient;
  readonly #current = new AsyncLocalStorage<Subsegment>();
  readonly #requests = new WeakMap<object, Subsegment>();
  #coldStart = true;

  constructor(options: XRayTracerOptions) {
    this.serviceName = options.serviceName;
    this.#enabled = options.enabled ?? tracingEnabledByEnvironment();
    this.#daemon = options.daemon ?? new XRayDaemonClient(daemonAddress(process.env.AWS_XRAY_DAEMON_ADDRESS));
    if (this.#enabled) {
      subscribe(undiciChannels.create, this.#onRequestCreate);
      subscribe(undiciChannels.headers, this.#onRequestHeaders);
      subscribe(undiciChannels.error, this.#onRequestError);
    }
  }

  isTracingEnabled(): boolean {
    return this.#enabled;
  }

  /**
   * One invocation as the subsegment `## <handler>` of the segment Lambda opened for it (the trace
   * header's Parent). Its documents are handed to the daemon before the invocation returns. Untraced
   * when tracing is off or the request is not sampled.
   */
  async traceInvocation<R>(handlerName: string, work: () => Promise<R>): Promise<R> {
    const coldStart = this.#coldStart;
    this.#coldStart = false;
    if (!this.#enabled) return work();
    const trace = getXrayTraceDataFromEnv();
    if (trace?.Sampled !== '1' || trace.Root === undefined || trace.Parent === undefined) return work();
    const invocation = new Subsegment(trace.Root, trace.Parent, `## ${handlerName}`);
    invocation.annotate('ColdStart', coldStart);
    invocation.annotate('Service', this.serviceName);
    try {
      return await this.#within(invocation, work);
    } finally {
      await this.#daemon.flush();
    }
  }

  /** A subsegment of the current one around `work`, its error recorded; `work` alone outside a trace. */
  async subsegment<T>(
    name: string,
    annotations: Record<string, AnnotationValue>,
    work: () => Promise<T>,
  ): Promise<T> {
    const parent = this.#current.getStore();
    if (parent === undefined) return work();
    const child = parent.child(name);
    for (const [key, value] of Object.entries(annotations)) child.annotate(key, value);
    return this.#within(child, work);
  }

  /** `work` as the current subsegment, which records its error and is sent when the work ends. */
  async #within<T>(segment: Subsegment, work: () => Promise<T>): Promise<T> {
    try {
      return await this.#current.run(segment, work);
    } catch (error) {
      segment.recordException(error);
      throw error;
    } finally {
      this.#daemon.send(segment.close());
    }
  }

  /**
   * The client with each command traced (a middleware at the build step, so one subsegment spans the
   * call's retries). Inside no trace a command passes through untouched.
   */
  captureAWSv3Client<
    I extends object,
    O extends object,
    C extends { middlewareStack: MiddlewareStack<I, O> },
  >(client: C & { middlewareStack: MiddlewareStack<I, O> }): C {
    client.middlewareStack.add(this.#sdkMiddleware<I, O>(), {
      step: 'build',
      name: 'xrayTracing',
      override: true,
    });
    return client;
  }

  /** Stops listening to fetch() and closes the socket (tests; a Lambda container never needs it). */
  close(): void {
    unsubscribe(undiciChannels.create, this.#onRequestCreate);
    unsubscribe(undiciChannels.headers, this.#onRequestHeaders);
    unsubscribe(undiciChannels.error, this.#onRequestError);
    this.#daemon.close();
  }

  #sdkMiddleware<I extends object, O extends object>(): BuildMiddleware<I, O> {
    return (next, context) => async (args) => {
      const parent = this.#current.getStore();
      if (parent === undefined) return next(args);
      const call = parent.child((context.clientName ?? 'AWS').replace(/Client$/, ''), 'aws');
      const request: unknown = args.request;
      if (typeof request === 'object' && request !== null && 'headers' in request) {
        const { headers } = request;
        if (typeof headers === 'object' && headers !== null)
          Object.assign(headers, { 'X-Amzn-Trace-Id': call.traceHeader });
      }
      call.setAws({
        operation: (context.commandName ?? 'unknown').replace(/Command$/, ''),
        region: process.env.AWS_REGION ?? '',
        ...resourceOf(args.input),
      });
      const record = (metadata: ResponseMetadata) => {
        if (metadata.requestId !== undefined) call.setAws({ request_id: metadata.requestId });
        if (metadata.attempts !== undefined) call.setAws({ retries: Math.max(0, metadata.attempts - 1) });
        if (metadata.httpStatusCode !== undefined) call.setResponse(metadata.httpStatusCode);
      };
      try {
        const result = await next(args);
        record(metadataOf(result.output));
        return result;
      } catch (error) {
        record(metadataOf(error));
        if (isThrottling(error)) call.flag('throttle');
        call.recordException(error, metadataOf(error).httpStatusCode !== undefined);
        throw error;
      } finally {
        this.#daemon.send(call.close());
      }
    };
  }

  readonly #onRequestCreate = (message: unknown): void => {
    const request = undiciRequest(message);
    const parent = this.#current.getStore();
    if (request === undefined || parent === undefined) return;
    // The URL without its query: a query can carry a token, and a trace must not.
    const url = new URL(request.path, request.origin);
    const call = parent.child(url.hostname, 'remote');
    call.setRequest(request.method, `${url.origin}${url.pathname}`);
    this.#requests.set(request, call);
  };

  readonly #onRequestHeaders = (message: unknown): void => {
    const call = this.#finish(message);
    if (call === undefined) return;
    const status = undiciStatus(message);
    if (status !== undefined) call.setResponse(status);
    this.#daemon.send(call.close());
  };

  readonly #onRequestError = (message: unknown): void => {
    const call = this.#finish(message);
    if (call === undefined) return;
    const error =
      typeof message === 'object' && message !== null && 'error' in message ? message.error : message;
    call.recordException(error, true);
    this.#daemon.send(call.close());
  };

  #finish(message: unknown): Subsegment | undefined {
    const request = undiciRequest(message);
    if (request === undefined) return undefined;
    const call = this.#requests.get(request);
    this.#requests.delete(request);
    return call;
  }
}
