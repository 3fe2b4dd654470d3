import { describe, expect, it } from 'vitest';
import { idPrefixes, isId, newId } from '../../lib/ids.ts';

describe('ids', () => {
  it.each(Object.entries(idPrefixes))('mints %s ids as <prefix>_<ulid>', (kind, prefix) => {
    const id = newId(kind as keyof typeof idPrefixes);
    expect(id).toMatch(new RegExp(`^${prefix}_[0-9A-HJKMNP-TV-Z]{26}$`));
    expect(isId(kind as keyof typeof idPrefixes, id)).toBe(true);
  });

  it('sorts ids minted later after earlier ones, even within one millisecond', () => {
    const ids = Array.from({ length: 1000 }, () => newId('sandbox'));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('refuses ids of another kind or with bad characters', () => {
    expect(isId('sandbox', newId('org'))).toBe(false);
    expect(isId('sandbox', 'sbx_01ARZ3NDEKTSV4RRFFQ69G5FAU')).toBe(false); // U is not Crockford base32
    expect(isId('sandbox', 'sbx_01ARZ3NDEKTSV4RRFFQ69G5FA')).toBe(false);
    expect(isId('sandbox', 'sbx_../../etc/passwd')).toBe(false);
  });
});
