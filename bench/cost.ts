/**
 * What a sandbox lifecycle costs on AWS, from what the benchmark measured (the DynamoDB requests with
 * their items, each step's duration) and list prices. An estimate: the rules below are DynamoDB's
 * published ones, applied to item sizes measured as their JSON length (a little above DynamoDB's own
 * count, so the estimate errs high).
 */

/**
 * US East (N. Virginia) list prices, on-demand, arm64, as AWS publishes them (DynamoDB on-demand since its
 * November 2024 reduction). Written down on the date below from the published price lists, which this
 * machine cannot reach to re-check: verify them on the AWS pricing pages before relying on the totals.
 */
export const prices = {
  asOf: '2026-12-03',
  dynamodbPerMillionWriteUnits: 0.625,
  dynamodbPerMillionReadUnits: 0.125,
  lambdaPerMillionRequests: 0.2,
  lambdaPerGbSecondArm: 0.0000133334,
  sqsPerMillionRequests: 0.4,
  apiGatewayRestPerMillionRequests: 3.5,
  eventBridgePerMillionEvents: 1.0,
} as const;

/** The functions' memory (infra/cdk/constructs/control-plane-function.ts default). */
export const functionMemoryGb = 0.5;

export interface CapacityUnits {
  read: number;
  write: number;
}

const size = (item: unknown) => Buffer.byteLength(JSON.stringify(item ?? {}), 'utf8');
const units = (bytes: number, per: number) => Math.max(1, Math.ceil(bytes / per));

/** Global secondary indexes an item is on (their key attributes are present), each written with it. */
function indexesOf(item: Record<string, unknown>): number {
  return ['GSI1PK', 'GSI2PK', 'GSI3PK'].filter((name) => typeof item[name] === 'string').length;
}

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/**
 * The read and write request units of one answered request. Reads: consistent, 4 KB units per item
 * (a missing item still costs one). Transactions: two units per KB per item, conditions included; index
 * writes: one unit per KB per index, twice when the item moves within it (its index key changes on
 * every transition), so counted twice.
 */
export function capacityOf(command: string, input: unknown, output: unknown): CapacityUnits {
  const request = record(input);
  const answer = record(output);
  switch (command) {
    case 'GetItemCommand':
      return { read: units(size(answer.Item), 4096), write: 0 };
    case 'BatchGetItemCommand': {
      const asked = Object.values(record(request.RequestItems)).flatMap((table) => list(record(table).Keys));
      const found = Object.values(record(answer.Responses)).flatMap((items) => list(items));
      const bytes = found.map(size);
      return {
        read: bytes.reduce((sum, b) => sum + units(b, 4096), 0) + (asked.length - found.length),
        write: 0,
      };
    }
    case 'QueryCommand': {
      const bytes = list(answer.Items).reduce<number>((sum, item) => sum + size(item), 0);
      const eventual = typeof request.IndexName === 'string';
      return { read: units(bytes, 4096) * (eventual ? 0.5 : 1), write: 0 };
    }
    case 'TransactWriteItemsCommand': {
      let write = 0;
      for (const action of list(request.TransactItems)) {
        const { Put, Update, Delete, ConditionCheck } = record(action);
        const item = record(record(Put).Item);
        // Updates and deletes touch small items here (counters, the chain head, outbox records): under 1 KB.
        const bytes =
          Put !== undefined ? size(item) : Update !== undefined || Delete !== undefined ? 512 : 256;
        write += 2 * units(bytes, 1024);
        if (Put !== undefined) write += 2 * indexesOf(item) * units(bytes, 1024);
        else if (ConditionCheck !== undefined) write -= 2 * units(bytes, 1024) - 2;
      }
      return { read: 0, write };
    }
    case 'UpdateItemCommand':
    case 'DeleteItemCommand':
      return { read: 0, write: 1 };
    case 'PutItemCommand':
      return { read: 0, write: units(size(request.Item), 1024) };
    default:
      return { read: 0, write: 0 };
  }
}

export interface LifecycleUse {
  capacity: CapacityUnits;
  /** Lambda invocations and their summed duration (ms). */
  invocations: number;
  durationMs: number;
  sqsRequests: number;
  apiRequests: number;
  events: number;
}

/** Dollars for `lifecycles` lifecycles, by service. */
export function costOf(use: LifecycleUse, lifecycles: number): [string, string, number][] {
  const m = lifecycles / 1_000_000;
  const gbSeconds = (use.durationMs / 1000) * functionMemoryGb;
  return [
    [
      'DynamoDB',
      `${use.capacity.write} write + ${use.capacity.read} read units`,
      m *
        (use.capacity.write * prices.dynamodbPerMillionWriteUnits +
          use.capacity.read * prices.dynamodbPerMillionReadUnits),
    ],
    [
      'Lambda',
      `${use.invocations} invocations, ${gbSeconds.toFixed(3)} GB-s`,
      m * use.invocations * prices.lambdaPerMillionRequests +
        lifecycles * gbSeconds * prices.lambdaPerGbSecondArm,
    ],
    ['SQS', `${use.sqsRequests} requests`, m * use.sqsRequests * prices.sqsPerMillionRequests],
    [
      'API Gateway (REST)',
      `${use.apiRequests} requests`,
      m * use.apiRequests * prices.apiGatewayRestPerMillionRequests,
    ],
    ['EventBridge', `${use.events} events`, m * use.events * prices.eventBridgePerMillionEvents],
  ];
}
