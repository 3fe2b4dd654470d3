import { describe, expect, it } from 'vitest';
import { redactSecrets } from '../../lib/redact.ts';

describe('redaction', () => {
  const secret = 'sk/live+key=0123 456&x';

  it('removes a credential in every encoding a provider may echo it in', () => {
    const echoes = [
      secret,
      encodeURIComponent(secret),
      encodeURIComponent(secret).replaceAll('%20', '+'),
      Buffer.from(secret).toString('base64'),
      Buffer.from(secret).toString('base64url'),
      Buffer.from(secret).toString('hex'),
      JSON.stringify(secret).slice(1, -1),
    ];
    for (const echo of echoes) {
      const redacted = redactSecrets(`the provider said: token=${echo} is not valid`, [secret]);
      expect(redacted, echo).toBe('the provider said: token=[redacted] is not valid');
    }
  });

  it('leaves other text alone, and ignores secrets too short to redact safely', () => {
    expect(redactSecrets('nothing secret here', [secret])).toBe('nothing secret here');
    expect(redactSecrets('a b c', ['a'])).toBe('a b c');
  });
});
