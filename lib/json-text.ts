import type * as z from './zod.ts';

/**
 * Text that should hold JSON of a known shape (a file, a queue message, a launch record) checked in one
 * step: anything that is not JSON, or not that shape, fails the same way as a shape mismatch.
 */
export function safeParseJsonText<S extends z.ZodMiniType>(
  schema: S,
  text: string,
): ReturnType<S['safeParse']> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  return schema.safeParse(value) as ReturnType<S['safeParse']>;
}
