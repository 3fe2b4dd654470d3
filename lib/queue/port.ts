import { lifecycleActions } from '../schemas/sandbox-parts.ts';
import { webhookDeliverySchema } from '../schemas/webhooks.ts';
import * as z from '../zod.ts';

export const queueNames = ['provision', 'terminate', 'operations', 'webhooks'] as const;
export type QueueName = (typeof queueNames)[number];

/** A message only says "look at sandbox X": the record in the store is the truth. */
export const workMessageSchema = z.strictObject({
  sandboxId: z.string().check(z.minLength(1), z.maxLength(64)),
  orgId: z.string().check(z.minLength(1), z.maxLength(64)),
  /**
   * Sent when a reservation was released, to let a waiting sandbox try at once. If it still has to wait
   * the wake message is acknowledged: the sandbox's own waiting message keeps its place, so wakes never
   * multiply the messages of one sandbox.
   */
  wake: z.optional(z.literal(true)),
  /** On the operations queue: the lifecycle call to finish (the record's transitional status says it too). */
  operation: z.optional(z.enum(lifecycleActions)),
  /**
   * On the operations queue: an idle check (lib/scheduler/idle-check.ts) of the running stretch that
   * began at this time; a check of an earlier stretch is acknowledged.
   */
  idleSince: z.optional(z.string().check(z.maxLength(64))),
  /** On the webhooks queue: the endpoint, and the delivery it gets (lib/webhooks/deliver.ts). */
  webhookId: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
  delivery: z.optional(webhookDeliverySchema),
  /** On the operations queue: the snapshot record (status creating) to take on the backend. */
  snapshotId: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
});
export type WorkMessage = z.infer<typeof workMessageSchema>;

export interface SendOptions {
  delaySeconds?: number;
}

export interface WorkQueue {
  send(queue: QueueName, message: WorkMessage, options?: SendOptions): Promise<void>;
  /** Backoff: the message reappears after `seconds` (the worker then reports it as a batch failure). */
  changeVisibility(queue: QueueName, receiptHandle: string, seconds: number): Promise<void>;
}

/** A message that exhausted its queue's maxReceiveCount. */
export interface DeadLetter {
  body: string;
  receiveCount: number;
  /** Removes it from the dead-letter queue once handled. */
  ack(): Promise<void>;
}

export interface DeadLetterSource {
  receive(queue: QueueName, max: number): Promise<DeadLetter[]>;
}
