// Writing events to the outbox. Called inside the transaction that makes the change, so an
// event exists exactly when its change does; the delivery rows for every enabled webhook
// subscribed to the topic are written in the same transaction.
import { uuidv7 } from '../../ids.ts';
import { isoTime } from '../../timestamps.ts';
import { WriteBatch } from '../../db/batch.ts';
import type { Executor } from '../../db/open.ts';
import type { AnyTopic } from './topics.ts';
import * as q from './sql.ts';

interface ResourceObject {
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

/** The body receivers get (docs/adr/0006-events-in-an-outbox.md). Built once; every attempt sends these bytes. */
export function envelope(id: string, e: EventInput): string {
  const at = isoTime(e.now);
  return JSON.stringify({
    data: {
      id,
      type: 'WebhookEvent',
      // Accrue's WebhookEvent: `id` repeated in attributes, `updatedAt` (an event never changes: its createdAt).
      attributes: {
        id,
        topic: e.topic,
        clientId: e.clientId,
        ...(e.userId ? { userId: e.userId } : {}),
        ...(e.walletId ? { walletId: e.walletId } : {}),
        updatedAt: at,
        createdAt: at,
      },
      relationships: { event: { data: { type: e.resource.type, id: e.resource.id } } },
    },
    included: [e.resource],
  });
}

/**
 * Writes the event and its deliveries: into the caller's write batch (flushed with the change
 * it belongs to), or at once as one statement.
 */
export async function recordEvent(
  tx: Executor,
  e: EventInput,
  opts: { onlyWebhookId?: string; batch?: WriteBatch } = {},
): Promise<q.EventRow> {
  const id = uuidv7();
  const event: q.EventRow = {
    id,
    clientId: e.clientId,
    topic: e.topic,
    userId: e.userId ?? null,
    walletId: e.walletId ?? null,
    resourceType: e.resource.type,
    resourceId: e.resource.id,
    body: envelope(id, e),
    createdAt: e.now,
  };
  const batch = opts.batch ?? new WriteBatch();
  batch.add(q.eventInsertPart(event));
  for (const part of q.deliveriesInsertParts(event, opts.onlyWebhookId)) batch.add(part);
  if (!opts.batch) await batch.flush(tx);
  return event;
}
