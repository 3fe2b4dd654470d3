import { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, BillingMode, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { tableKeys } from '../../../lib/store/dynamodb/table.ts';

export interface StateTableProps {
  /**
   * Keep the table (and its data) when the stack is deleted, and refuse deletion while protected.
   * @default true
   */
  readonly retain?: boolean;
}

/**
 * The single table (docs/store.md): on-demand, point-in-time recovery, deletion protection, the GSIs
 * the store queries, and TTL on the idempotency records' `ttl` attribute. Key names come from the same
 * module the store uses, so the two cannot drift.
 */
export class StateTable extends Construct {
  readonly table: Table;

  constructor(scope: Construct, id: string, props: StateTableProps = {}) {
    super(scope, id);
    const retain = props.retain ?? true;
    this.table = new Table(this, 'Table', {
      partitionKey: { name: tableKeys.partition, type: AttributeType.STRING },
      sortKey: { name: tableKeys.sort, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: retain,
      encryption: TableEncryption.AWS_MANAGED,
      timeToLiveAttribute: tableKeys.ttl,
      removalPolicy: retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    for (const index of [tableKeys.byParent, tableKeys.byStatus, tableKeys.byPool]) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: { name: index.partition, type: AttributeType.STRING },
        sortKey: { name: index.sort, type: AttributeType.STRING },
      });
    }
  }
}
