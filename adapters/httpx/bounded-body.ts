import { errors } from '../../lib/errors.ts';

/**
 * The most a JSON answer from a provider or plugin may hold. Exec results are the large ones: an answer
 * within this is parsed and its output then cut to api.execOutputMaxBytes; a larger one is refused rather
 * than buffered (the function's memory is the limit that matters).
 */
export const maxJsonAnswerBytes = 64 * 1024 * 1024;

/** The adapter protocol's file limit: downloads larger than this are refused, not buffered. */
export const maxDownloadBytes = 100 * 1024 * 1024;

/**
 * Reads a response body up to `maxBytes`, chunk by chunk; past it the body is cancelled and the call is
 * provider_unavailable naming the limit. Nothing beyond the limit is ever held in memory.
 */
export async function readBounded(response: Response, maxBytes: number, what: string): Promise<Buffer> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge(what, maxBytes);
  }
  if (response.body === null) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(what, maxBytes);
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
}

function tooLarge(what: string, maxBytes: number) {
  return errors.providerUnavailable(`${what} answered with more than ${maxBytes} bytes; refused unread`, {
    limitBytes: maxBytes,
  });
}
