/**
 * The Connect protocol's JSON codec, as E2B's envd speaks it (connectrpc.com/docs/protocol): unary calls
 * are a JSON body answered by JSON; server-streaming calls carry enveloped messages (1 flag byte, a 4-byte
 * big-endian length, the JSON), and the last envelope (flag 0x02) ends the stream with `{}` or an error.
 */

/** Connect's error codes with the HTTP status a unary error carries (connectrpc.com/docs/protocol#error-codes). */
export const connectCodes = {
  invalid_argument: 400,
  unauthenticated: 401,
  permission_denied: 403,
  not_found: 404,
  already_exists: 409,
  failed_precondition: 412,
  resource_exhausted: 429,
  unimplemented: 501,
  unavailable: 503,
  deadline_exceeded: 504,
  internal: 500,
} as const;
export type ConnectCode = keyof typeof connectCodes;

export class ConnectError extends Error {
  readonly code: ConnectCode;
  constructor(code: ConnectCode, message: string) {
    super(message);
    this.code = code;
  }
}

const endStreamFlag = 0x02;

/** One enveloped message of a stream. */
export function envelope(message: unknown, end = false): Buffer {
  const json = Buffer.from(JSON.stringify(message), 'utf8');
  const frame = Buffer.alloc(5 + json.length);
  frame.writeUInt8(end ? endStreamFlag : 0, 0);
  frame.writeUInt32BE(json.length, 1);
  json.copy(frame, 5);
  return frame;
}

/** The end of a stream: `{}`, or the error it ended with. */
export function endStream(error?: { code: ConnectCode; message: string }): Buffer {
  return envelope(error === undefined ? {} : { error }, true);
}

/**
 * The one message of a server-streaming request (the client sends exactly one). Anything else, a
 * compressed envelope or a length that does not match, is the caller's error.
 */
export function firstEnvelope(body: Buffer): unknown {
  if (body.length < 5)
    throw new ConnectError('invalid_argument', 'the request is not an enveloped Connect message');
  const flags = body.readUInt8(0);
  if ((flags & 0x01) !== 0)
    throw new ConnectError('invalid_argument', 'compressed Connect messages are not accepted');
  const length = body.readUInt32BE(1);
  if (5 + length > body.length)
    throw new ConnectError('invalid_argument', 'the Connect envelope is cut short');
  return parseJson(body.subarray(5, 5 + length));
}

/**
 * Every message of a client stream, in order (StreamInput). Here the request arrives whole (the API buffers
 * a request body), so the stream's messages are all there; an end-stream envelope, if any, ends them.
 */
export function allEnvelopes(body: Buffer): unknown[] {
  const messages: unknown[] = [];
  let at = 0;
  while (at < body.length) {
    const frame = body.subarray(at);
    if (frame.length < 5) throw new ConnectError('invalid_argument', 'the Connect envelope is cut short');
    if ((frame.readUInt8(0) & endStreamFlag) !== 0) break;
    messages.push(firstEnvelope(frame));
    at += 5 + frame.readUInt32BE(1);
  }
  return messages;
}

export function parseJson(bytes: Buffer): unknown {
  if (bytes.length === 0) return {};
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw new ConnectError('invalid_argument', `the request is not valid JSON: ${(error as Error).message}`);
  }
}
