import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { pageLinks, pageOf } from '../../http/paging.ts';
import { COMMON_ERRORS, defaultBody, document, idParams, listDocument, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { getEvent, listEvents, replayEvent } from './domain.ts';
import { eventResource } from './render.ts';
import { ListEventsQuery, ReplayBody, WebhookEvent } from './schemas.ts';

const TAGS = ['Webhook events'];
const NoQuery = Type.Object({}, { additionalProperties: false });

export async function eventRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;

  app.get(
    '/api/v1/webhook-events',
    {
      schema: {
        tags: TAGS,
        operationId: 'listWebhookEvents',
        summary: 'List events',
        description:
          'Newest first. Filter by topic, creation time (`createdAfter` inclusive, `createdBefore` exclusive) and delivery state.',
        querystring: ListEventsQuery,
        response: responses({ 200: listDocument(ref(WebhookEvent)) }, COMMON_ERRORS),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const q = req.query;
      const { rows, total } = await listEvents(ctx.db, {
        clientId: req.client.id,
        filters: {
          topic: q['filter[topic]'],
          createdAfter: q['filter[createdAfter]'] ? new Date(q['filter[createdAfter]']) : undefined,
          createdBefore: q['filter[createdBefore]'] ? new Date(q['filter[createdBefore]']) : undefined,
          deliveryState: q['filter[deliveryState]'],
        },
        page,
      });
      return {
        data: rows.map((e) => eventResource(e, base)),
        meta: { total, ...page },
        links: pageLinks(base, req.url, page, total),
      };
    },
  );

  app.get(
    '/api/v1/webhook-events/:eventId',
    {
      schema: {
        tags: TAGS,
        operationId: 'getWebhookEvent',
        summary: 'Get an event with its deliveries and attempts',
        params: idParams('eventId'),
        querystring: NoQuery,
        response: responses({ 200: document(ref(WebhookEvent)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const { event, ...history } = await getEvent(ctx.db, { clientId: req.client.id, eventId: req.params.eventId });
      return { data: eventResource(event, base, history) };
    },
  );

  app.post(
    '/api/v1/webhook-events/:eventId/replay',
    {
      schema: {
        tags: TAGS,
        operationId: 'replayWebhookEvent',
        summary: 'Deliver an event again',
        description:
          'Same event id (`webhook-id`) and body. Goes to every enabled webhook subscribed to the topic, or to `webhookId` alone. The body is optional.',
        params: idParams('eventId'),
        querystring: NoQuery,
        body: ReplayBody,
        response: responses({ 200: document(ref(WebhookEvent)) }, [...COMMON_ERRORS, 404]),
      },
      preValidation: defaultBody({ data: { type: 'WebhookEventReplay', attributes: {} } }),
    },
    async (req) => {
      const { event, ...history } = await replayEvent(ctx.db, {
        clientId: req.client.id,
        eventId: req.params.eventId,
        webhookId: req.body.data.attributes.webhookId,
        now: ctx.clock.now(),
      });
      return { data: eventResource(event, base, history) };
    },
  );
}
