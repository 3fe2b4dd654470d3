import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../lib/config.ts';
import { resolveNetworkPolicy } from '../../../lib/network/policy.ts';
import { warmTargetSchema } from '../../../lib/schemas/warm-targets.ts';
import { shapeKey, targetShape } from '../../../lib/warm/shape.ts';
import { inWindows, sizeNow } from '../../../lib/warm/targets.ts';

const at = (iso: string) => new Date(iso);

describe('warm target windows (UTC)', () => {
  // 2026-12-07 is a Monday.
  it('keeps a target inside a window and not outside it, on the days named', () => {
    const weekdays = [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'] as const, from: '07:00', to: '19:00' }];
    const windows = weekdays.map((window) => ({ ...window, days: [...window.days] }));
    expect(inWindows(windows, at('2026-12-07T07:00:00Z'))).toBe(true);
    expect(inWindows(windows, at('2026-12-07T18:59:00Z'))).toBe(true);
    expect(inWindows(windows, at('2026-12-07T19:00:00Z'))).toBe(false);
    expect(inWindows(windows, at('2026-12-07T06:59:00Z'))).toBe(false);
    expect(inWindows(windows, at('2026-12-06T12:00:00Z'))).toBe(false); // a Sunday
    expect(inWindows(undefined, at('2026-12-06T12:00:00Z'))).toBe(true);
  });

  it('runs a window whose end is before its start past midnight, into the next day', () => {
    const night = [{ days: ['fri' as const], from: '22:00', to: '02:00' }];
    expect(inWindows(night, at('2026-12-11T23:00:00Z'))).toBe(true); // Friday evening
    expect(inWindows(night, at('2026-12-12T01:30:00Z'))).toBe(true); // Saturday morning, Friday's window
    expect(inWindows(night, at('2026-12-12T02:00:00Z'))).toBe(false);
    expect(inWindows(night, at('2026-12-11T01:30:00Z'))).toBe(false); // Friday morning: Thursday's, not named
  });

  it('sizes a target by its windows, and refuses malformed targets', () => {
    const target = warmTargetSchema.parse({ size: 5, windows: [{ from: '09:00', to: '17:00' }] });
    expect(target.maxAgeSeconds).toBe(3600);
    expect(sizeNow(target, at('2026-12-07T10:00:00Z'))).toBe(5);
    expect(sizeNow(target, at('2026-12-07T20:00:00Z'))).toBe(0);
    for (const bad of [
      { size: -1 },
      { size: 1001 },
      { size: 1, maxAgeSeconds: 10 },
      { size: 1, windows: [{ from: '24:00', to: '01:00' }] },
      { size: 1, windows: [{ from: '9:00', to: '10:00' }] },
      { size: 1, windows: [] },
      { size: 1, cpu: 2 },
    ]) {
      expect(warmTargetSchema.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });
});

describe('warm shapes', () => {
  const config = parseConfig({
    devMode: true,
    pools: [],
    templates: [{ name: 'offline', network: { egress: 'deny' } }],
    network: { denyAlways: ['169.254.0.0/16'] },
  });

  it("matches a create exactly when its template, resources and egress policy in force are the target's", () => {
    const target = targetShape(warmTargetSchema.parse({ size: 1, template: 'offline' }), config);
    expect(target).toEqual({
      template: 'offline',
      resources: { cpu: 1, memoryMiB: 1024, diskGiB: 10 },
      network: { egress: 'deny', allow: [], denyAlways: ['169.254.0.0/16'], from: 'template' },
    });
    // The same policy asked for in the request (not from the template) is the same shape.
    const asked = {
      template: 'offline',
      resources: { cpu: 1, memoryMiB: 1024, diskGiB: 10 },
      network: resolveNetworkPolicy({ egress: 'deny' }, undefined, config.network),
    };
    expect(shapeKey(asked)).toBe(shapeKey(target));
    // Any difference is another shape.
    for (const other of [
      { ...asked, template: null },
      { ...asked, resources: { ...asked.resources, cpu: 2 } },
      { ...asked, resources: { ...asked.resources, diskGiB: 20 } },
      { ...asked, network: resolveNetworkPolicy({ egress: 'allow' }, undefined, config.network) },
      { ...asked, network: null },
    ]) {
      expect(shapeKey(other)).not.toBe(shapeKey(target));
    }
  });
});
