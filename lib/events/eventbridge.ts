import { type EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import type { EventPublisher, LifecycleEvent } from './port.ts';

/** PutEvents takes at most 10 entries per call. */
const batchSize = 10;

/** Publishes lifecycle events to a custom EventBridge bus; any failed entry fails the call (retried later). */
export class EventBridgePublisher implements EventPublisher {
  readonly #client: EventBridgeClient;
  readonly #busName: string;

  constructor(client: EventBridgeClient, busName: string) {
    this.#client = client;
    this.#busName = busName;
  }

  async publish(events: LifecycleEvent[]): Promise<void> {
    for (let i = 0; i < events.length; i += batchSize) {
      const result = await this.#client.send(
        new PutEventsCommand({
          Entries: events.slice(i, i + batchSize).map((event) => ({
            EventBusName: this.#busName,
            Source: 'differently',
            DetailType: event.detailType,
            Detail: JSON.stringify(event.detail),
            Time: new Date(event.detail.at),
          })),
        }),
      );
      if ((result.FailedEntryCount ?? 0) > 0) {
        const first = result.Entries?.find((entry) => entry.ErrorCode !== undefined);
        throw new Error(
          `EventBridge refused ${result.FailedEntryCount} events (${first?.ErrorCode}: ${first?.ErrorMessage})`,
        );
      }
    }
  }
}
