import { type RecordedExchange, type Recording, redacted } from './recorder.ts';

/**
 * Holds a fake to a recording of the real service: each recorded request is sent again, in order, to the
 * fake, and the fake's answer must have the recorded status, the recorded media type, and every field the
 * real answer had, with the same JSON type (a fake may say more, never less). Ids and URLs the service
 * handed out are learned as the replay goes (the recorded value at a JSON path, against the fake's at the
 * same path) and substituted into later requests. A fake's clock is not the service's, so a read is
 * replayed as a poll: sent again until the fake's answer has the recorded status and the recorded values of
 * its state fields (`state`, `status`, `phase`) and, for a run of identical requests, of the fields that
 * changed during the run (what the poller waited for); then compared.
 */
export interface ReplayTarget {
  /** The fake's equivalent of the recording's baseUrl. */
  baseUrl: string;
  /** Sent instead of the redacted credential headers. */
  headers: Record<string, string>;
}

export async function replayProblems(recording: Recording, target: ReplayTarget): Promise<string[]> {
  const learned = new Map<string, string>([
    [recording.baseUrl.replace(/\/+$/, ''), target.baseUrl.replace(/\/+$/, '')],
  ]);
  const substitute = (text: string) => {
    let out = text;
    for (const [from, to] of [...learned].sort((a, b) => b[0].length - a[0].length))
      out = out.replaceAll(from, to);
    return out;
  };
  const problems: string[] = [];
  for (const [index, run] of runsOf(recording.exchanges).entries()) {
    const { request, response } = run.last;
    const url = substitute(request.url);
    const where = `#${index} ${request.method} ${new URL(request.url).pathname}`;
    const headers: Record<string, string> = { ...target.headers };
    for (const [name, value] of Object.entries(request.headers))
      if (value !== redacted && name !== 'content-length') headers[name] = value;
    const send = () =>
      fetch(url, {
        method: request.method,
        headers,
        ...(request.body !== undefined && { body: new Uint8Array(bodyBytes(request.body, substitute)) }),
      }).then(async (answer) => ({ answer, text: Buffer.from(await answer.arrayBuffer()).toString('utf8') }));
    let answer: Response;
    let text: string;
    try {
      ({ answer, text } = await send());
      // A poll: until the fake reaches what the service reached (bounded only as a safety net).
      for (
        let tries = 0;
        run.waitedFor !== undefined && !reached(run.waitedFor, answer.status, text) && tries < 400;
        tries++
      ) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        ({ answer, text } = await send());
      }
    } catch (error) {
      problems.push(`${where}: the fake did not answer (${String(error)})`);
      continue;
    }
    if (answer.status !== response.status) {
      problems.push(`${where}: status ${answer.status}, the service answered ${response.status}`);
      continue;
    }
    const recordedType = mediaType(response.headers['content-type']);
    const fakeType = mediaType(answer.headers.get('content-type') ?? undefined);
    if (recordedType !== fakeType)
      problems.push(
        `${where}: content type ${fakeType || '(none)'}, the service sent ${recordedType || '(none)'}`,
      );
    if (!recordedType.includes('json') || response.body === undefined || !('text' in response.body)) continue;
    const recorded = parsed(response.body.text);
    const fake = parsed(text);
    if (recorded === undefined) continue;
    if (fake === undefined) {
      problems.push(`${where}: the fake's body is not JSON`);
      continue;
    }
    problems.push(...shapeProblems(recorded, fake, '').map((p) => `${where}: ${p}`));
    learn(recorded, fake, learned);
  }
  return problems;
}

interface Run {
  last: RecordedExchange;
  /** For a poll: its last status and the last values of the fields that changed while it ran. */
  waitedFor?: { status: number; values: [string[], unknown][] };
}

/** Consecutive identical requests without a body are one poll. */
function runsOf(exchanges: RecordedExchange[]): Run[] {
  const runs: RecordedExchange[][] = [];
  for (const exchange of exchanges) {
    const current = runs.at(-1);
    const previous = current?.at(-1);
    if (
      current !== undefined &&
      previous !== undefined &&
      previous.request.body === undefined &&
      exchange.request.body === undefined &&
      previous.request.method === exchange.request.method &&
      previous.request.url === exchange.request.url
    )
      current.push(exchange);
    else runs.push([exchange]);
  }
  return runs.map((run) => {
    const first = run[0] as RecordedExchange;
    const last = run.at(-1) as RecordedExchange;
    const isRead = last.request.body === undefined && ['GET', 'HEAD'].includes(last.request.method);
    if (run.length === 1 && !isRead) return { last };
    const before = jsonOf(first.response.body);
    const after = jsonOf(last.response.body);
    // State fields, and fields that changed value during a poll (not fields that appeared: a fake lacking
    // one fails the comparison instead).
    const values = leaves(after).filter(
      ([path, value]) =>
        stateField.test(path.at(-1) ?? '') ||
        (run.length > 1 && valueAt(before, path) !== undefined && !Object.is(valueAt(before, path), value)),
    );
    return { last, waitedFor: { status: last.response.status, values } };
  });
}

const stateField = /^(state|status|phase)$/i;

function jsonOf(body: RecordedExchange['response']['body']): unknown {
  return body !== undefined && 'text' in body ? parsed(body.text) : undefined;
}

function leaves(node: unknown, path: string[] = []): [string[], unknown][] {
  if (typeof node !== 'object' || node === null) return path.length === 0 ? [] : [[path, node]];
  return Object.entries(node).flatMap(([key, value]) => leaves(value, [...path, key]));
}

function valueAt(node: unknown, path: string[]): unknown {
  let here = node;
  for (const part of path)
    here = typeof here === 'object' && here !== null ? (here as Record<string, unknown>)[part] : undefined;
  return here;
}

/** Ids change between runs: only values without digits (states, flags) are waited for. */
function reached(waitedFor: NonNullable<Run['waitedFor']>, status: number, text: string): boolean {
  if (status !== waitedFor.status) return false;
  const body = parsed(text);
  return waitedFor.values
    .filter(([, value]) => typeof value !== 'string' || !/\d/.test(value))
    .every(([path, value]) => Object.is(valueAt(body, path), value));
}

function bodyBytes(
  body: NonNullable<RecordedExchange['request']['body']>,
  substitute: (t: string) => string,
): Buffer {
  return 'text' in body ? Buffer.from(substitute(body.text), 'utf8') : Buffer.from(body.base64, 'base64');
}

function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function kind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Every field of the recorded value, with its JSON type, must be in the fake's (null matches anything). */
export function shapeProblems(recorded: unknown, fake: unknown, path: string): string[] {
  if (recorded === null || fake === null) return [];
  if (kind(recorded) !== kind(fake))
    return [`${path || '(body)'} is ${kind(fake)} in the fake, ${kind(recorded)} from the service`];
  if (Array.isArray(recorded) && Array.isArray(fake)) {
    if (recorded.length === 0 || fake.length === 0) return [];
    return shapeProblems(recorded[0], fake[0], `${path}[0]`);
  }
  if (typeof recorded === 'object' && typeof fake === 'object') {
    const problems: string[] = [];
    for (const [key, value] of Object.entries(recorded as Record<string, unknown>)) {
      const here = path === '' ? key : `${path}.${key}`;
      if (!(key in (fake as Record<string, unknown>))) problems.push(`${here} is missing in the fake`);
      else problems.push(...shapeProblems(value, (fake as Record<string, unknown>)[key], here));
    }
    return problems;
  }
  return [];
}

const isoTime = /^\d{4}-\d{2}-\d{2}T/;

/** Ids and URLs the service handed out, against the fake's at the same place. */
function learn(recorded: unknown, fake: unknown, into: Map<string, string>): void {
  if (typeof recorded === 'string' && typeof fake === 'string') {
    if (recorded !== fake && recorded.length >= 6 && !isoTime.test(recorded) && /[\d/.:-]/.test(recorded))
      into.set(recorded, fake);
    return;
  }
  if (Array.isArray(recorded) && Array.isArray(fake)) {
    recorded.forEach((item, i) => {
      learn(item, fake[i], into);
    });
    return;
  }
  if (typeof recorded === 'object' && recorded !== null && typeof fake === 'object' && fake !== null)
    for (const [key, value] of Object.entries(recorded))
      learn(value, (fake as Record<string, unknown>)[key], into);
}
