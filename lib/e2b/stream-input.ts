/**
 * process.Process/StreamInput, envd's client stream of input: a `start` message naming the process, then
 * `data` messages, delivered in order. Through API Gateway and a Lambda function a request body arrives
 * whole, so the stream's input is delivered when the client ends it (there is no full duplex on this
 * door); SendInput is the call for input as it is typed. Input goes in the same pieces any SendInput
 * would (at most maxStdinBytesPerRequest each) and under the same bounds, so nothing here reaches a
 * process that SendInput could not.
 */
import { maxStdinBytesPerRequest } from '../schemas/processes.ts';
import { allEnvelopes, ConnectError } from './connect-protocol.ts';
import { streamInputDataSchema, streamInputKeepaliveSchema, streamInputStartSchema } from './schemas.ts';

/** The most input one StreamInput carries (the process table's own bound on input waiting unread). */
export const maxStreamInputBytes = 1024 * 1024;

export interface StreamInputTarget {
  pidOf(selector: { pid?: number | undefined; tag?: string | undefined }): Promise<number>;
  write(pid: number, dataBase64: string): Promise<void>;
}

export async function deliverStreamInput(body: Buffer, target: StreamInputTarget): Promise<void> {
  // Base64 in JSON envelopes: a third more than the input it carries, and a little framing.
  if (body.length > maxStreamInputBytes * 2)
    throw new ConnectError('invalid_argument', `StreamInput carries at most ${maxStreamInputBytes} bytes`);
  const [first, ...rest] = allEnvelopes(body);
  const start = streamInputStartSchema.safeParse(first);
  if (!start.success)
    throw new ConnectError('invalid_argument', 'StreamInput must begin with {start: {process: {pid}}}');
  const selector = start.data.start.process;
  if (selector.pid === undefined && selector.tag === undefined)
    throw new ConnectError('invalid_argument', 'StreamInput start: name the process by pid or tag');
  const chunks: Buffer[] = [];
  for (const [index, message] of rest.entries()) {
    const data = streamInputDataSchema.safeParse(message);
    if (data.success) {
      chunks.push(Buffer.from(data.data.data.input.pty ?? data.data.data.input.stdin ?? '', 'base64'));
    } else if (!streamInputKeepaliveSchema.safeParse(message).success) {
      throw new ConnectError(
        'invalid_argument',
        `StreamInput message ${index + 2}: after the start, send {data: {input}} or {keepalive: {}}`,
      );
    }
  }
  const input = Buffer.concat(chunks);
  if (input.length > maxStreamInputBytes)
    throw new ConnectError('invalid_argument', `StreamInput carries at most ${maxStreamInputBytes} bytes`);
  const pid = await target.pidOf(selector);
  for (let at = 0; at < input.length; at += maxStdinBytesPerRequest) {
    await target.write(pid, input.subarray(at, at + maxStdinBytesPerRequest).toString('base64'));
  }
}
