import { Type } from 'typebox';
import { listQuery } from '../../http/paging.ts';
import { JSON_TEXT } from '../../http/serializer.ts';
import { Nullable, Timestamp, Uuid, requestBody, resource } from '../../http/schemas.ts';
import { TEST_TOPIC, TOPICS } from './topics.ts';

const DeliveryState = Type.Enum(['pending', 'succeeded', 'failed', 'canceled']);

const Attempt = Type.Object({
  attempt: Type.Integer(),
  startedAt: Timestamp(),
  durationMs: Type.Integer(),
  statusCode: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  responseExcerpt: Nullable(
    Type.String({
      description: "The first 500 characters of the receiver's answer; null for receivers on non-public addresses",
    }),
  ),
});

const Delivery = Type.Object({
  id: Type.String(),
  webhookId: Type.String(),
  trigger: Type.Enum(['event', 'replay', 'test']),
  state: DeliveryState,
  attemptCount: Type.Integer(),
  nextAttemptAt: Nullable(Timestamp({ description: 'When the next attempt is due (pending only)' })),
  completedAt: Nullable(Timestamp()),
  attempts: Type.Array(Attempt),
});

export const WebhookEvent = resource(
  'WebhookEvent',
  'WebhookEvent',
  {
    id: Type.String({ description: "The event's id again (Accrue's member)" }),
    topic: Type.String(),
    clientId: Type.String(),
    userId: Type.Optional(Type.String({ description: 'The user the event concerns; absent when none' })),
    walletId: Type.Optional(Type.String({ description: 'The wallet the event concerns; absent when none' })),
    updatedAt: Timestamp({ description: 'An event never changes: its createdAt' }),
    createdAt: Timestamp(),
    deliveryState: Type.Enum(['pending', 'succeeded', 'failed', 'none'], {
      description:
        'pending while any delivery is; else failed if any failed; else succeeded if any succeeded; none without deliveries or with canceled ones only',
    }),
    payload: Type.Record(Type.String(), Type.Unknown(), {
      description: 'The exact body sent to receivers',
      [JSON_TEXT]: true,
    }),
    deliveries: Type.Optional(
      Type.Array(Delivery, { description: 'Deliveries and their attempts (single-event reads)' }),
    ),
  },
  {
    relationships: { event: Type.Object({ data: Type.Object({ type: Type.String(), id: Type.String() }) }) },
    links: { self: Type.String() },
  },
);

export const ListEventsQuery = listQuery({
  'filter[topic]': Type.Optional(Type.Enum([...TOPICS, TEST_TOPIC])),
  'filter[createdAfter]': Type.Optional(Timestamp({ description: 'Inclusive' })),
  'filter[createdBefore]': Type.Optional(Timestamp({ description: 'Exclusive' })),
  'filter[deliveryState]': Type.Optional(Type.Enum(['pending', 'succeeded', 'failed', 'none'])),
});

export const ReplayBody = requestBody(
  'WebhookEventReplay',
  Type.Object(
    { webhookId: Type.Optional(Uuid({ description: 'Replay to this webhook only' })) },
    { additionalProperties: false },
  ),
);

export const schemas = [WebhookEvent];
