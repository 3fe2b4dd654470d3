import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { SqsWorkQueue } from '../../../lib/queue/sqs.ts';

// The embedded SQS server does not report MessageGroupId back, so what SQS fair queues key on is checked
// at the SDK call itself (the one AWS-only fact here).
describe('the work queues on SQS', () => {
  it('send every message with MessageGroupId = its org id, so SQS fair queues share the workers by org', async () => {
    const client = new SQSClient({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    });
    const sqs = mockClient(client);
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm' });
    const queue = new SqsWorkQueue(client, {
      provision: 'https://sqs/p',
      terminate: 'https://sqs/t',
      operations: 'https://sqs/o',
      webhooks: 'https://sqs/w',
    });
    await queue.send('provision', { sandboxId: 'sbx_1', orgId: 'org_a' });
    await queue.send('terminate', { sandboxId: 'sbx_2', orgId: 'org_b' });
    await queue.send('operations', { sandboxId: 'sbx_3', orgId: 'org_c', operation: 'stop' });
    const sent = sqs.commandCalls(SendMessageCommand).map((call) => call.args[0].input);
    expect(sent.map(({ QueueUrl, MessageGroupId }) => [QueueUrl, MessageGroupId])).toEqual([
      ['https://sqs/p', 'org_a'],
      ['https://sqs/t', 'org_b'],
      ['https://sqs/o', 'org_c'],
    ]);
    sqs.restore();
  });
});
