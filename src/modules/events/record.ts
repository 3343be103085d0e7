// Writing events to the outbox. Called inside the transaction that makes the change, so an
// event exists exactly when its change does; the delivery rows for every enabled webhook
// subscribed to the topic are written in the same transaction.
import { uuidv7 } from 'uuidv7';
import type { Executor } from '../../db/open.ts';
import type { AnyTopic } from './topics.ts';
import * as q from './sql.ts';

export interface ResourceObject {
  id: string;
  type: string;
  [member: string]: unknown;
}

export interface EventInput {
  clientId: string;
  topic: AnyTopic;
  userId?: string;
  walletId?: string;
  /** The resource the event is about; it becomes included[0]. */
  resource: ResourceObject;
  now: Date;
}

/** The body receivers get (decisions §10). Built once; every attempt sends these bytes. */
export function envelope(id: string, e: EventInput): string {
  return JSON.stringify({
    data: {
      id,
      type: 'WebhookEvent',
      attributes: {
        topic: e.topic,
        clientId: e.clientId,
        ...(e.userId ? { userId: e.userId } : {}),
        ...(e.walletId ? { walletId: e.walletId } : {}),
        createdAt: e.now.toISOString(),
      },
      relationships: { event: { data: { type: e.resource.type, id: e.resource.id } } },
    },
    included: [e.resource],
  });
}

export async function recordEvent(tx: Executor, e: EventInput, opts: { onlyWebhookId?: string } = {}): Promise<q.EventRow> {
  const id = uuidv7();
  const event = await q.insertEvent(tx, {
    id,
    clientId: e.clientId,
    topic: e.topic,
    userId: e.userId ?? null,
    walletId: e.walletId ?? null,
    resourceType: e.resource.type,
    resourceId: e.resource.id,
    body: envelope(id, e),
    createdAt: e.now,
  });
  const targets = opts.onlyWebhookId
    ? [opts.onlyWebhookId]
    : (await q.enabledWebhooks(tx, e.clientId)).filter((w) => w.topics.includes('*') || w.topics.includes(e.topic)).map((w) => w.id);
  await q.insertDeliveries(
    tx,
    targets.map((webhookId) => ({
      id: uuidv7(),
      clientId: e.clientId,
      eventId: id,
      webhookId,
      trigger: opts.onlyWebhookId ? 'test' : 'event',
      state: 'pending',
      nextAttemptAt: e.now,
      createdAt: e.now,
      updatedAt: e.now,
    })),
  );
  return event;
}
