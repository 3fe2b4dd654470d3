import { errors } from '../errors.ts';
import * as z from '../zod.ts';

const cursorSchema = z.object({ after: z.string() });

/** Cursors are opaque to clients: base64url of the last key returned. */
export function encodeCursor(after: string): string {
  return Buffer.from(JSON.stringify({ after }), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  try {
    const parsed = cursorSchema.safeParse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
    if (parsed.success) return parsed.data.after;
  } catch {
    // fall through to the error below
  }
  throw errors.invalidRequest('cursor is not valid: pass nextCursor from a previous page unchanged', {
    field: 'cursor',
  });
}
