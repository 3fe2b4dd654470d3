import { describe, expect, it } from 'vitest';
import { silentLog } from '../../../lib/log.ts';
import type { WorkMessage } from '../../../lib/queue/port.ts';
import type { DeliveryAttempt, WebhookRecord } from '../../../lib/schemas/webhooks.ts';
import type { WebhookStore } from '../../../lib/store/webhooks/port.ts';
import { deliverWebhook, failureReason } from '../../../lib/webhooks/deliver.ts';

const hook: WebhookRecord = {
  id: 'whk_1',
  orgId: 'org_1',
  url: 'https://hooks.example.com/in?token=s3cr3t',
  events: null,
  description: null,
  secrets: [{ secret: 'whsec_a', validUntil: null }],
  createdAt: '2026-12-07T00:00:00.000Z',
};
const message = {
  kind: 'webhook',
  orgId: 'org_1',
  webhookId: 'whk_1',
  delivery: {
    id: 'evt_1_7',
    type: 'sandbox.running',
    createdAt: '2026-12-07T12:00:00.000Z',
    // biome-ignore format: one event's data, on one line
    data: { sandboxId: 'sbx_1', orgId: 'org_1', projectId: null, pool: 'p', status: 'running', from: 'provisioning', reason: null, cause: 'user' },
  },
} as unknown as WorkMessage;

/** The store's two calls the worker makes; every attempt it records is kept, in order. */
function recordingStore(fail = false) {
  const attempts: DeliveryAttempt[] = [];
  const store = {
    getWebhook: async () => hook,
    recordDeliveryAttempt: async (attempt: DeliveryAttempt) => {
      if (fail) throw new Error('the table is throttled');
      attempts.push(attempt);
    },
  } as unknown as WebhookStore;
  return { store, attempts };
}
const now = () => new Date('2026-12-07T12:00:05.000Z');

describe("the webhooks worker's delivery records", () => {
  it('records each attempt with the answer it got: a refusal retries, a 2xx is done', async () => {
    const { store, attempts } = recordingStore();
    const refused = await deliverWebhook(
      { store, log: silentLog, devMode: false, now, send: async () => 503 },
      message,
      1,
    );
    const answered = await deliverWebhook(
      { store, log: silentLog, devMode: false, now, send: async () => 204 },
      message,
      2,
    );
    expect(refused).not.toEqual(answered);
    expect(attempts).toEqual([
      {
        orgId: 'org_1',
        webhookId: 'whk_1',
        // What the record keeps of the event: its id, type and time, and the sandbox.
        // biome-ignore format: one line, as the event above
        delivery: { id: 'evt_1_7', type: 'sandbox.running', createdAt: '2026-12-07T12:00:00.000Z', sandboxId: 'sbx_1' },
        at: '2026-12-07T12:00:05.000Z',
        status: 503,
        error: null,
      },
      expect.objectContaining({ status: 204, error: null }),
    ]);
  });

  it('records why an attempt got no answer, without the URL or what the server said', async () => {
    const { store, attempts } = recordingStore();
    const refused = Object.assign(new Error(`connect ECONNREFUSED ${hook.url}`), { code: 'ECONNREFUSED' });
    await deliverWebhook(
      { store, log: silentLog, devMode: false, now, send: async () => Promise.reject(refused) },
      message,
      1,
    );
    expect(attempts[0]).toMatchObject({ status: null, error: 'could not connect (ECONNREFUSED)' });
    expect(JSON.stringify(attempts)).not.toContain('s3cr3t');
    expect(failureReason(Object.assign(new Error('x'), { name: 'TimeoutError' }))).toBe(
      'no answer within 10 s',
    );
    expect(failureReason(new Error('the name resolves to a loopback, link-local or private address'))).toBe(
      'the name resolves to a loopback, link-local or private address',
    );
    expect(failureReason(new Error(`something about ${hook.url}`))).toBe('the request failed');
  });

  it('delivers even when its record cannot be written', async () => {
    const { store } = recordingStore(true);
    const outcome = await deliverWebhook(
      { store, log: silentLog, devMode: false, now, send: async () => 200 },
      message,
      1,
    );
    const { store: healthy } = recordingStore();
    expect(outcome).toEqual(
      await deliverWebhook(
        { store: healthy, log: silentLog, devMode: false, now, send: async () => 200 },
        message,
        1,
      ),
    );
  });
});
