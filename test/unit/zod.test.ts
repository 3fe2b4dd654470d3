import { describe, expect, it } from 'vitest';
import * as z from '../../lib/zod.ts';

describe('the validation library (lib/zod.ts)', () => {
  // zod's mini API ships without messages ("Invalid input" for every issue) until a locale is configured.
  it("states issues in zod's English messages, as the API's errors quote them", () => {
    const result = z
      .strictObject({ name: z.string().check(z.minLength(2)) })
      .safeParse({ name: 'a', extra: 1 });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((issue) => issue.message)).toEqual([
      'Too small: expected string to have >=2 characters',
      'Unrecognized key: "extra"',
    ]);
    expect(z.int().safeParse('1').error?.issues[0]?.message).toBe(
      'Invalid input: expected number, received string',
    );
  });
});
