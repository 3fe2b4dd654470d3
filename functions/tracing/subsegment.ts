import { randomBytes } from 'node:crypto';

export type AnnotationValue = string | number | boolean;

/** An exception as X-Ray's segment documents record it under `cause`. */
interface ExceptionRecord {
  id: string;
  type: string;
  message: string;
  remote?: true;
}

/**
 * A finished subsegment as the X-Ray daemon takes it: sent on its own, linked to its trace and its parent
 * by id (X-Ray's segment document format, "subsegments sent separately").
 */
export interface SubsegmentDocument {
  type: 'subsegment';
  id: string;
  trace_id: string;
  parent_id: string;
  name: string;
  start_time: number;
  end_time?: number;
  namespace?: 'aws' | 'remote';
  annotations?: Record<string, AnnotationValue>;
  http?: {
    request?: { method: string; url: string };
    response?: { status: number; content_length?: number };
  };
  aws?: Record<string, string | number>;
  error?: true;
  throttle?: true;
  fault?: true;
  cause?: { exceptions: ExceptionRecord[] };
}

/** Longer messages are cut: a datagram holds 64 KB, and a trace needs the start of a message, not all of it. */
const messageLimit = 1024;

/** X-Ray's limit on a (sub)segment's name, which only some characters may make up. */
const nameLimit = 200;

function segmentName(name: string): string {
  return name.replace(/[^\p{L}\p{N}\s_.:/%&#=+\\\-@]/gu, '_').slice(0, nameLimit) || 'unnamed';
}

function seconds(epochMs: number): number {
  return epochMs / 1000;
}

/** One timed piece of an invocation's trace; its children carry its id as their parent. */
export class Subsegment {
  readonly id = randomBytes(8).toString('hex');
  readonly #document: SubsegmentDocument;

  constructor(traceId: string, parentId: string, name: string, namespace?: 'aws' | 'remote') {
    this.#document = {
      type: 'subsegment',
      id: this.id,
      trace_id: traceId,
      parent_id: parentId,
      name: segmentName(name),
      start_time: seconds(Date.now()),
      ...(namespace !== undefined && { namespace }),
    };
  }

  get traceId(): string {
    return this.#document.trace_id;
  }

  /** The X-Amzn-Trace-Id header of a call made inside this subsegment: the callee's segment hangs off it. */
  get traceHeader(): string {
    return `Root=${this.traceId};Parent=${this.id};Sampled=1`;
  }

  child(name: string, namespace?: 'aws' | 'remote'): Subsegment {
    return new Subsegment(this.traceId, this.id, name, namespace);
  }

  /** An indexed key to filter traces by (X-Ray allows letters, digits and underscores in the key). */
  annotate(key: string, value: AnnotationValue): void {
    this.#document.annotations = { ...this.#document.annotations, [key.replace(/\W/g, '_')]: value };
  }

  setAws(fields: Record<string, string | number>): void {
    this.#document.aws = { ...this.#document.aws, ...fields };
  }

  setRequest(method: string, url: string): void {
    this.#document.http = { ...this.#document.http, request: { method, url } };
  }

  /** The response's status, and the flag X-Ray reads from it: 429 throttle, other 4xx error, 5xx fault. */
  setResponse(status: number, contentLength?: number): void {
    this.#document.http = {
      ...this.#document.http,
      response: { status, ...(contentLength !== undefined && { content_length: contentLength }) },
    };
    if (status === 429) this.flag('throttle');
    else if (status >= 400 && status < 500) this.flag('error');
    else if (status >= 500) this.flag('fault');
  }

  /** error: the caller's fault (a 4xx); throttle: a refusal to retry later; fault: the callee's or ours. */
  flag(kind: 'error' | 'throttle' | 'fault'): void {
    if (kind === 'throttle') this.#document.error = true;
    this.#document[kind] = true;
  }

  /**
   * The exception's type and the start of its message (which, like every error message of the project,
   * carries no credential); `remote` when it came from the callee. No stack: a trace locates the failing
   * call, the log line of the invocation carries the stack.
   */
  recordException(error: unknown, remote = false): void {
    const record: ExceptionRecord = {
      id: randomBytes(8).toString('hex'),
      type: error instanceof Error ? error.name : typeof error,
      message: (error instanceof Error ? error.message : String(error)).slice(0, messageLimit),
      ...(remote && { remote: true }),
    };
    this.#document.cause = { exceptions: [...(this.#document.cause?.exceptions ?? []), record] };
    const flagged = this.#document.error ?? this.#document.fault ?? this.#document.throttle;
    if (flagged === undefined) this.flag('fault');
  }

  close(): SubsegmentDocument {
    this.#document.end_time ??= seconds(Date.now());
    return { ...this.#document };
  }
}
