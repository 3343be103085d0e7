import type { AttemptRow, DeliveryRow, EventDeliveryState, EventRow } from './sql.ts';
import { JsonText } from '../../http/serializer.ts';
import { isoTime, isoTimeOrNull } from '../../timestamps.ts';

export function eventResource(
  e: EventRow & { deliveryState: EventDeliveryState },
  baseUrl: string,
  history?: { deliveries: DeliveryRow[]; attempts: AttemptRow[] },
) {
  const at = isoTime(e.createdAt);
  return {
    id: e.id,
    type: 'WebhookEvent' as const,
    // Accrue's WebhookEvent: `id` repeated in attributes, `updatedAt`, and userId/walletId only
    // when the event concerns one (undefined: the response serializer leaves the field out).
    attributes: {
      id: e.id,
      topic: e.topic,
      clientId: e.clientId,
      userId: e.userId || undefined,
      walletId: e.walletId || undefined,
      updatedAt: at,
      createdAt: at,
      deliveryState: e.deliveryState,
      // Sent as stored: the text is not parsed and serialized again (src/http/serializer.ts).
      payload: new JsonText(e.body),
      ...(history
        ? {
            deliveries: history.deliveries.map((d) => ({
              id: d.id,
              webhookId: d.webhookId,
              trigger: d.trigger as 'event' | 'replay' | 'test',
              state: d.state as 'pending' | 'succeeded' | 'failed' | 'canceled',
              attemptCount: d.attemptCount,
              nextAttemptAt: d.state === 'pending' ? isoTime(d.nextAttemptAt) : null,
              completedAt: isoTimeOrNull(d.completedAt),
              attempts: history.attempts
                .filter((a) => a.deliveryId === d.id)
                .map((a) => ({
                  attempt: a.attempt,
                  startedAt: isoTime(a.startedAt),
                  durationMs: a.durationMs,
                  statusCode: a.statusCode,
                  error: a.error,
                  responseExcerpt: a.responseExcerpt,
                })),
            })),
          }
        : {}),
    },
    relationships: { event: { data: { type: e.resourceType, id: e.resourceId } } },
    links: { self: `${baseUrl}/api/v1/webhook-events/${e.id}` },
  };
}
