import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { jsonObject, parseJson } from './json.ts';

/** cdk.json as `cdk synth` reads it: the context (feature flags) a test's App must run with too. */
export const cdkJson = parseJson(
  z.object({ context: jsonObject }),
  readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8'),
);
