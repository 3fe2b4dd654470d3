/**
 * Reconcile pass cost against DynamoDB Local (npm run bench): DynamoDB requests and adapter calls for one
 * pass with 1, 1,000 and 10,000 live sandboxes on one pool. Goal: one List per pool, and reads that grow
 * with pages (100 sandboxes per Query), not one request per sandbox.
 */
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { newId } from '../lib/ids.ts';
import { reconcile } from '../lib/scheduler/reconcile.ts';
import { sandboxItem } from '../lib/store/dynamodb/items.ts';
import type { SandboxRecord } from '../lib/store/records.ts';
import { sandboxRecord } from '../test/helpers/records.ts';
import { benchPlane, countingDynamoDb } from './dynamodb.ts';
import { printTable } from './stats.ts';

const db = await countingDynamoDb();
const { doc } = db;
const rows: string[][] = [];
try {
  for (const live of [1, 1000, 10_000]) {
    const tableName = `reconcile-bench-${live}`;
    const { store, fake, plane } = await benchPlane(db, tableName);
    const installation = await store.installation();
    const org = await plane.tenancy.createOrg({ name: 'bench' });
    const longAgo = '2026-01-01T00:00:00.000Z';
    const records: SandboxRecord[] = [];
    for (let i = 0; i < live; i++) {
      const id = newId('sandbox');
      const instance = fake.plant(id, installation);
      records.push(seeded(id, org.id, instance.ref, longAgo));
    }
    for (let i = 0; i < records.length; i += 25) {
      await doc.send(
        new BatchWriteCommand({
          RequestItems: {
            [tableName]: records.slice(i, i + 25).map((r) => ({ PutRequest: { Item: sandboxItem(r) } })),
          },
        }),
      );
    }
    const before = db.requests();
    const listsBefore = fake.calls.get('list') ?? 0;
    const started = performance.now();
    const report = await reconcile(plane);
    const elapsed = performance.now() - started;
    const pool = report.pools[0];
    if (pool === undefined || pool.listed !== live || pool.failed + pool.orphansDeleted !== 0) {
      throw new Error(`the pass should change nothing: ${JSON.stringify(pool)}`);
    }
    rows.push([
      String(live),
      String(db.requests() - before),
      String((fake.calls.get('list') ?? 0) - listsBefore),
      String(fake.calls.get('delete') ?? 0),
      elapsed.toFixed(0),
    ]);
  }
  printTable(
    'One reconcile pass, one pool, all sandboxes healthy (DynamoDB Local)',
    ['live sandboxes', 'DynamoDB requests', 'adapter List calls', 'adapter Deletes', 'ms'],
    rows,
  );
  console.log('requests = lease put + installation + pool-index pages (100 per Query) + lease release\n');
} finally {
  await db.stop();
}

function seeded(id: string, orgId: string, backendRef: string, at: string): SandboxRecord {
  return sandboxRecord(orgId, {
    id,
    status: 'running',
    version: 3,
    pool: 'fake',
    backendRef,
    placement: { pool: 'fake', rejected: [], decidedAt: at },
    createdAt: at,
    updatedAt: at,
    expiresAt: '2030-01-01T00:00:00.000Z',
  });
}
