import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { chargeOf, type LedgerChange } from '../../budgets/billing.ts';
import {
  type BudgetScope,
  budgetExceeded,
  type Ledger,
  type LedgerOwner,
  unlimitedMicros,
} from '../../budgets/ledger.ts';
import { errors } from '../../errors.ts';
import { ledgerSchema, orgRecordSchema, projectRecordSchema } from '../records.ts';
import { keyOf } from './items.ts';
import { type Action, isConditionFailed, type TableClient } from './table-client.ts';

/**
 * Budget ledgers in DynamoDB: one item per month of an org's budget and of each project's, holding
 * `reserved`, `spent`, `used` (their sum) and `free` (the budget less `used`). Conditions compare but
 * cannot add, so a charge is conditional on `free >= charge` of that one item, and never reads the
 * budget. `free` starts from the budget the month's first charge finds (initLedger) and moves with
 * every budget change (budgetActions): a reservation racing a change counts against one of the two.
 */

const names = { '#free': 'free', '#reserved': 'reserved', '#spent': 'spent', '#used': 'used' };

export function ledgerKey(owner: LedgerOwner, month: string) {
  return keyOf.budgetLedger(owner.orgId, owner.projectId, month);
}

export function ledgerLabel(owner: LedgerOwner, month: string): string {
  return `budget:${owner.projectId === null ? 'org' : 'project'}:${month}`;
}

/** A sandbox's charge to one ledger; a positive one only while the budget's headroom covers it. */
export function ledgerUpdate(owner: LedgerOwner, change: LedgerChange): Action {
  const charge = chargeOf(change);
  const values = { ':reserved': change.reserved, ':spent': change.spent, ':charge': charge };
  return {
    label: ledgerLabel(owner, change.month),
    item: {
      Update: {
        TableName: '',
        Key: ledgerKey(owner, change.month),
        ExpressionAttributeNames: names,
        ...(charge > 0
          ? {
              UpdateExpression:
                'SET #free = #free - :charge ADD #reserved :reserved, #spent :spent, #used :charge',
              ConditionExpression: 'attribute_exists(#free) AND #free >= :charge',
              ExpressionAttributeValues: values,
            }
          : {
              // Giving budget back is never refused (a settlement, a release).
              UpdateExpression: 'ADD #reserved :reserved, #spent :spent, #used :charge, #free :release',
              ExpressionAttributeValues: { ...values, ':release': -charge },
            }),
      },
    },
  };
}

/** The budget (micros) the owner has now, or null; not_found when the org or project is gone. */
export async function budgetOf(table: TableClient, owner: LedgerOwner): Promise<number | null> {
  if (owner.projectId === null) {
    const org = await table.getParsed(keyOf.org(owner.orgId), orgRecordSchema);
    if (org === undefined) throw errors.notFound('org', owner.orgId);
    return org.budget;
  }
  const project = await table.getParsed(keyOf.project(owner.orgId, owner.projectId), projectRecordSchema);
  if (project === undefined) throw errors.notFound('project', owner.projectId);
  return project.budget;
}

/**
 * Gives a month's ledger its headroom from the owner's budget if it has none yet (its first charge of
 * the month). A budget change meanwhile set the headroom itself, and then this does nothing.
 */
export async function initLedger(table: TableClient, owner: LedgerOwner, month: string): Promise<void> {
  const budget = await budgetOf(table, owner);
  try {
    await table.call((doc) =>
      doc.send(
        new UpdateCommand({
          TableName: table.tableName,
          Key: ledgerKey(owner, month),
          UpdateExpression: 'SET #free = :base - if_not_exists(#used, :zero)',
          ConditionExpression: 'attribute_not_exists(#free)',
          ExpressionAttributeNames: { '#free': 'free', '#used': 'used' },
          ExpressionAttributeValues: { ':base': budget ?? unlimitedMicros, ':zero': 0 },
        }),
      ),
    );
  } catch (error) {
    if (!isConditionFailed(error)) throw error;
  }
}

export async function readLedger(
  table: TableClient,
  owner: LedgerOwner,
  month: string,
): Promise<Ledger & { initialized: boolean }> {
  const item = await table.get(ledgerKey(owner, month));
  return { ...ledgerSchema.parse(item ?? {}), initialized: typeof item?.free === 'number' };
}

/** Why a charge to a ledger was refused: its budget's numbers, read after the refusal. */
export async function refusal(table: TableClient, owner: LedgerOwner, change: LedgerChange): Promise<Error> {
  const [ledger, budget] = await Promise.all([
    readLedger(table, owner, change.month),
    budgetOf(table, owner),
  ]);
  const scope: BudgetScope = owner.projectId === null ? 'org' : 'project';
  return budgetExceeded({
    scope,
    month: change.month,
    limit: budget ?? unlimitedMicros,
    used: ledger.reserved + ledger.spent,
    requested: chargeOf(change),
  });
}

/**
 * A budget change: the owner's record and the headroom of each month's ledger (created if missing) in
 * one transaction; `free` is set from `used`, so no earlier value of the budget is needed.
 */
export function budgetActions(owner: LedgerOwner, monthlyMicros: number | null, months: string[]): Action[] {
  const recordKey =
    owner.projectId === null ? keyOf.org(owner.orgId) : keyOf.project(owner.orgId, owner.projectId);
  return [
    {
      label: 'owner',
      item: {
        Update: {
          TableName: '',
          Key: recordKey,
          UpdateExpression: 'SET budget = :budget',
          ConditionExpression: 'attribute_exists(PK)',
          ExpressionAttributeValues: { ':budget': monthlyMicros },
        },
      },
    },
    ...months.map(
      (month): Action => ({
        label: ledgerLabel(owner, month),
        item: {
          Update: {
            TableName: '',
            Key: ledgerKey(owner, month),
            UpdateExpression: 'SET #free = :base - if_not_exists(#used, :zero)',
            ExpressionAttributeNames: { '#free': 'free', '#used': 'used' },
            ExpressionAttributeValues: { ':base': monthlyMicros ?? unlimitedMicros, ':zero': 0 },
          },
        },
      }),
    ),
  ];
}
