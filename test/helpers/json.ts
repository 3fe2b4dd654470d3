import * as z from 'zod';

/** JSON text read as `schema` says: a test fails on an answer it did not expect instead of casting it. */
export function parseJson<S extends z.ZodType>(schema: S, text: string): z.output<S> {
  return schema.parse(JSON.parse(text));
}

/** Any JSON object, its fields unknown (a log line, a template). */
export const jsonObject = z.record(z.string(), z.unknown());
