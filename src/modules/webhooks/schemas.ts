import { Type } from 'typebox';
import { listQuery } from '../../http/paging.ts';
import { Timestamp, requestBody, resource } from '../../http/schemas.ts';
import { TOPICS } from '../events/topics.ts';

const TopicOrAll = Type.Enum(['*', ...TOPICS], { description: 'A topic, or "*" (alone) for all' });
const Topics = Type.Array(TopicOrAll, { minItems: 1, maxItems: TOPICS.length + 1, uniqueItems: true });
const Url = Type.String({
  maxLength: 2048,
  description:
    'http or https; in live, public addresses only. Empty (or omitted on create): events are recorded and listed by the events API, but nothing is sent',
});
const Name = Type.String({ minLength: 1, maxLength: 200 });

export const Webhook = resource(
  'Webhook',
  'Webhook',
  {
    name: Type.String(),
    url: Type.String({ description: 'Empty when the webhook has no receiver (nothing is sent)' }),
    topics: Type.Array(Type.String()),
    enabled: Type.Boolean(),
    secret: Type.String({
      description:
        "The signing secret: whsec_ + base64 of 32 bytes. Shown on every read of the merchant's own webhook, as Accrue's contract requires",
    }),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { links: { self: Type.String() } },
);

export const CreateWebhookBody = requestBody(
  'Webhook',
  Type.Object(
    { name: Name, url: Type.Optional(Url), topics: Topics, enabled: Type.Optional(Type.Boolean({ default: true })) },
    { additionalProperties: false },
  ),
);

export const UpdateWebhookBody = requestBody(
  'Webhook',
  Type.Object(
    {
      name: Type.Optional(Name),
      url: Type.Optional(Url),
      topics: Type.Optional(Topics),
      enabled: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: false, minProperties: 1 },
  ),
);

export const ListWebhooksQuery = listQuery({});

export const schemas = [Webhook];
