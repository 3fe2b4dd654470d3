import { describe, expect, it } from 'vitest';
import { endStream, envelope, firstEnvelope } from '../../../lib/e2b/connect-protocol.ts';
import { envdPath } from '../../../lib/e2b/envd.ts';
import { refusedCreateOptions } from '../../../lib/e2b/schemas.ts';
import { e2bKeyForm, fromE2bKeyForm, sandboxToken } from '../../../lib/tenancy/auth.ts';

describe('E2B key shapes and sandbox tokens', () => {
  const key = 'key_01JD0000000000000000000000.c2VjcmV0LXBhcnQ';

  it("writes a key in E2B's shape (e2b_ and hex, as SDKs 2.27-2.45 require) and reads it back", () => {
    const shaped = e2bKeyForm(key);
    expect(shaped).toMatch(/^e2b_[0-9a-f]+$/);
    expect(Buffer.from(shaped.slice(4), 'hex').toString('utf8')).toBe(key);
    expect(fromE2bKeyForm(shaped)).toBe(key);
    // Anything else is taken as it is: a Differently key, an odd-length or upper-case hex tail.
    expect(fromE2bKeyForm(key)).toBe(key);
    expect(fromE2bKeyForm('e2b_abc')).toBe('e2b_abc');
    expect(fromE2bKeyForm('e2b_ABCD')).toBe('e2b_ABCD');
  });

  it('binds a token to one sandbox and one key, from either shape of the key, and never contains the secret', () => {
    const one = sandboxToken(key, 'sbx_01JD0000000000000000000001');
    expect(one).toBe(sandboxToken(e2bKeyForm(key), 'sbx_01JD0000000000000000000001'));
    expect(one).not.toBe(sandboxToken(key, 'sbx_01JD0000000000000000000002'));
    expect(one).not.toBe(sandboxToken(`${key}x`, 'sbx_01JD0000000000000000000001'));
    expect(one?.startsWith('key_01JD0000000000000000000000.')).toBe(true);
    expect(one).not.toContain('c2VjcmV0LXBhcnQ');
    expect(sandboxToken('not-a-key', 'sbx_01JD0000000000000000000001')).toBeUndefined();
  });
});

describe('the Connect envelope', () => {
  it('frames a message with a flag byte and a big-endian length, and reads one back', () => {
    const frame = envelope({ event: { start: { pid: 1 } } });
    expect(frame[0]).toBe(0);
    expect(frame.readUInt32BE(1)).toBe(frame.length - 5);
    expect(firstEnvelope(frame)).toEqual({ event: { start: { pid: 1 } } });
  });

  it('ends a stream with flag 0x02 and {} or the error', () => {
    expect(endStream()[0]).toBe(2);
    expect(JSON.parse(endStream().subarray(5).toString())).toEqual({});
    expect(JSON.parse(endStream({ code: 'not_found', message: 'gone' }).subarray(5).toString())).toEqual({
      error: { code: 'not_found', message: 'gone' },
    });
  });

  it('refuses a cut-short, compressed or missing envelope as invalid_argument', () => {
    const frame = envelope({ a: 1 });
    expect(() => firstEnvelope(frame.subarray(0, frame.length - 1))).toThrow(/cut short/);
    const compressed = Buffer.from(frame);
    compressed[0] = 1;
    expect(() => firstEnvelope(compressed)).toThrow(/compressed/);
    expect(() => firstEnvelope(Buffer.alloc(2))).toThrow(
      expect.objectContaining({ code: 'invalid_argument' }),
    );
  });
});

describe('E2B requests mapped onto Differently', () => {
  it('resolves relative envd paths against the home, and keeps absolute ones', () => {
    expect(envdPath('a/b.txt')).toBe('/home/user/a/b.txt');
    expect(envdPath('/work/x')).toBe('/work/x');
    expect(envdPath('../../etc')).toBe('/etc');
  });

  it("names every create option it cannot honour, and lets the SDK's defaults through", () => {
    expect(
      refusedCreateOptions({
        templateID: 'base',
        secure: true,
        allow_internet_access: true,
        autoPause: false,
      }),
    ).toEqual([]);
    expect(
      refusedCreateOptions({
        autoPause: true,
        network: { denyOut: [], rules: { 'api.example.com': [] } },
        mcp: {},
        volumeMounts: [{ name: 'v', path: '/v' }],
      }),
    ).toEqual(['network.rules', 'mcp', 'volumeMounts']);
    // autoPause maps onto the idle policy, which resumes on the next call: autoResume off cannot be kept.
    expect(refusedCreateOptions({ autoPause: true, autoResume: { enabled: true } })).toEqual([]);
    expect(refusedCreateOptions({ autoPause: true, autoResume: { enabled: false } })).toEqual([
      'autoResume: {enabled: false} (an idle-paused sandbox resumes on its next call)',
    ]);
    // Egress is the one policy now (lib/e2b/network.ts): denying all traffic is taken, a deny-list is not.
    expect(refusedCreateOptions({ allow_internet_access: false })).toEqual([]);
    expect(refusedCreateOptions({ network: { denyOut: ['0.0.0.0/0'], allowOut: ['pypi.org'] } })).toEqual([]);
    expect(refusedCreateOptions({ network: { denyOut: ['10.0.0.0/8'] } })).toEqual([
      'network.denyOut of some ranges only (10.0.0.0/8): deny all traffic (0.0.0.0/0) and list what is allowed in allowOut',
    ]);
  });
});
