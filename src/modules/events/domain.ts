// The events API: what happened, what was delivered, and replays.
import { uuidv7 } from '../../ids.ts';
import type { Db, Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import type { Page } from '../../http/paging.ts';
import { checkReceives } from '../webhooks/domain.ts';
import { findWebhook } from '../webhooks/sql.ts';
import { TEST_TOPIC } from './topics.ts';
import * as q from './sql.ts';

export async function listEvents(db: Executor, opts: { clientId: string; filters: q.EventFilters; page: Page }) {
  return q.listEventRows(db, opts.clientId, opts.filters, opts.page);
}

export async function getEvent(db: Executor, opts: { clientId: string; eventId: string }) {
  const event = await q.findEvent(db, opts.clientId, opts.eventId);
  if (!event) throw apiError('WebhookEventNotFound', `No event ${opts.eventId}.`);
  return { event, ...(await q.deliveriesOf(db, event.id)) };
}

/**
 * Delivers an event again, with the same id and body. Without `webhookId` it goes to every
 * enabled webhook subscribed to the topic now (a test event: to the webhook it was sent to).
 */
export async function replayEvent(db: Db, opts: { clientId: string; eventId: string; webhookId?: string; now: Date }) {
  await db.transaction(async (tx) => {
    // Held until the deliveries are written: retention cannot take the event meanwhile.
    if (!(await q.lockEventForReplay(tx, opts.clientId, opts.eventId)))
      throw apiError('WebhookEventNotFound', `No event ${opts.eventId}.`);
    const event = await q.findEvent(tx, opts.clientId, opts.eventId);
    if (!event) throw apiError('WebhookEventNotFound', `No event ${opts.eventId}.`);
    let targets: string[];
    if (opts.webhookId) {
      const w = await findWebhook(tx, opts.clientId, opts.webhookId);
      if (!w)
        throw apiError('WebhookNotFound', `No webhook ${opts.webhookId}.`, {
          status: 400,
          pointer: '/data/attributes/webhookId',
        });
      checkReceives(w, '/data/attributes/webhookId');
      targets = [w.id];
    } else if (event.topic === TEST_TOPIC) {
      const { deliveries } = await q.deliveriesOf(tx, event.id);
      const active = new Set((await q.enabledWebhooks(tx, opts.clientId)).map((w) => w.id));
      targets = [...new Set(deliveries.map((d) => d.webhookId))].filter((id) => active.has(id));
    } else {
      targets = (await q.enabledWebhooks(tx, opts.clientId))
        .filter((w) => w.topics.includes('*') || w.topics.includes(event.topic))
        .map((w) => w.id);
    }
    if (targets.length === 0)
      throw apiError('IllegalOperation', `No enabled webhook subscribes to ${event.topic}; name one with webhookId.`);
    await q.insertDeliveries(
      tx,
      targets.map((webhookId) => ({
        id: uuidv7(),
        clientId: opts.clientId,
        eventId: event.id,
        webhookId,
        trigger: 'replay',
        state: 'pending',
        nextAttemptAt: opts.now,
        createdAt: opts.now,
        updatedAt: opts.now,
      })),
    );
  });
  return getEvent(db, opts);
}
