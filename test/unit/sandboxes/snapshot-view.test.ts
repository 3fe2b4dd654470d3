import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { snapshotView } from '../../../lib/sandboxes/sandbox-operations.ts';
import { snapshotSchema } from '../../../lib/schemas/sandbox-operations.ts';
import type { SnapshotRecord } from '../../../lib/store/records.ts';

const stored: SnapshotRecord = {
  id: 'snap_01JXAMPLE0000000000000000',
  orgId: 'org_01JXAMPLE0000000000000000',
  projectId: null,
  sandboxId: 'sbx_01JXAMPLE0000000000000000',
  pool: 'local',
  backendRef: 'backend-secret-ref',
  kind: 'disk',
  sizeBytes: 10,
  status: 'ready',
  statusMessage: null,
  createdAt: '2026-12-01T00:00:00.000Z',
};

describe('a snapshot as tenants see it (REST and MCP alike)', () => {
  it('keeps the backend ref inside and sets updatedAt, from the creation time on records that lack it', () => {
    const view = snapshotView(stored);
    expect(z.strictObject(snapshotSchema.shape).parse(view)).toEqual(view);
    expect(view).not.toHaveProperty('backendRef');
    expect(view.updatedAt).toBe('2026-12-01T00:00:00.000Z');
    expect(snapshotView({ ...stored, updatedAt: '2026-12-02T00:00:00.000Z' }).updatedAt).toBe(
      '2026-12-02T00:00:00.000Z',
    );
  });
});
