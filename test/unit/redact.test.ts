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

  it('removes upper-case hex, every percent-encoding, JSON escapes, and base64 of the secret inside a longer value', () => {
    const key = 'dly_Sk7c9QmZ2x4Pq8rT';
    const everyCharEscaped = [...Buffer.from(key)]
      .map((byte) => `%${byte.toString(16).toUpperCase()}`)
      .join('');
    const echoes = [
      Buffer.from(key).toString('hex').toUpperCase(),
      everyCharEscaped,
      everyCharEscaped.toLowerCase(),
      [...key].map((char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
      key.toUpperCase(),
      Buffer.from(`Bearer ${key}`).toString('base64'),
      Buffer.from(`Bearer ${key}`).toString('base64url'),
      Buffer.from(`user:${key}`).toString('base64'),
      Buffer.from(`x:${key}`).toString('base64'),
      Buffer.from(`{"token":"${key}"}`).toString('base64'),
      encodeURIComponent(Buffer.from(`Basic ${key}`).toString('base64')),
    ];
    for (const echo of echoes) {
      const redacted = redactSecrets(`the provider said: ${echo} is not valid`, [key]);
      expect(recoverable(redacted, key), `${echo} -> ${redacted}`).toBe(false);
      expect(redacted, echo).toContain('[redacted]');
      expect(redacted.startsWith('the provider said: ')).toBe(true);
    }
  });

  it('leaves other text alone, and ignores secrets too short to redact safely', () => {
    expect(redactSecrets('nothing secret here', [secret])).toBe('nothing secret here');
    expect(redactSecrets('a b c', ['a'])).toBe('a b c');
  });
});

/**
 * Whether any 6 bytes of `secret` can be read back from `text`: as it stands (any case), or by decoding
 * each run of base64 or base64url characters at each of its four starting offsets, percent-escapes
 * undone first. Independent of how the redaction finds its forms.
 */
function recoverable(text: string, secret: string): boolean {
  const pieces = new Set<string>();
  for (let i = 0; i + 6 <= secret.length; i++) pieces.add(secret.slice(i, i + 6).toLowerCase());
  const has = (candidate: string) => [...pieces].some((piece) => candidate.toLowerCase().includes(piece));
  const unescaped = decodeURIComponent(text.replace(/%(?![0-9a-f]{2})/gi, '%25'));
  if (has(text) || has(unescaped)) return true;
  for (const run of unescaped.match(/[A-Za-z0-9+/_-]{8,}/g) ?? []) {
    for (let offset = 0; offset < 4; offset++) {
      const decoded = Buffer.from(run.slice(offset).replaceAll('-', '+').replaceAll('_', '/'), 'base64');
      if (has(decoded.toString('latin1'))) return true;
    }
  }
  return false;
}
