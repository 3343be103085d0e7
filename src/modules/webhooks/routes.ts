import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { pageLinks, pageOf } from '../../http/paging.ts';
import { COMMON_ERRORS, document, idParams, listDocument, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { eventResource } from '../events/render.ts';
import { WebhookEvent } from '../events/schemas.ts';
import { getEvent } from '../events/domain.ts';
import { createWebhook, deleteWebhook, getWebhook, listWebhooks, sendTestEvent, updateWebhook } from './domain.ts';
import { webhookResource } from './render.ts';
import type { WebhookRow } from './sql.ts';
import { CreateWebhookBody, ListWebhooksQuery, UpdateWebhookBody, Webhook } from './schemas.ts';

const TAGS = ['Webhooks'];
const NoQuery = Type.Object({}, { additionalProperties: false });

export async function webhookRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;
  /** The webhook's signing secret, unsealed for its owner's read. */
  const render = (
    w: WebhookRow,
    secret = ctx.sealer.open(w.secretSealed, 'webhook-secret', `webhooks:${w.id}`).toString('utf8'),
  ) => webhookResource(w, base, secret);
  const policy = { allowPrivate: ctx.config.webhooks.allowPrivate, maxPerMerchant: ctx.config.webhooks.maxPerMerchant };

  app.post(
    '/api/v1/webhooks',
    {
      schema: {
        tags: TAGS,
        operationId: 'createWebhook',
        summary: 'Register a webhook',
        description:
          'Events of the listed `topics` (or `["*"]` for all) are POSTed to `url`, signed with the returned `secret` (also shown on every read of the webhook). ' +
          'Only http(s) URLs on public addresses (loopback and private networks are refused unless the operator allows them for local development). ' +
          'A merchant has at most `WEBHOOK_MAX_PER_MERCHANT` webhooks (16 by default).',
        body: CreateWebhookBody,
        response: responses({ 201: document(ref(Webhook)) }, COMMON_ERRORS),
      },
    },
    async (req, reply) => {
      const a = req.body.data.attributes;
      const { webhook, secret } = await createWebhook(ctx.db, {
        clientId: req.client.id,
        ...a,
        policy,
        sealer: ctx.sealer,
        now: ctx.clock.now(),
      });
      reply.code(201).header('location', `${base}/api/v1/webhooks/${webhook.id}`);
      return { data: render(webhook, secret) };
    },
  );

  app.get(
    '/api/v1/webhooks',
    {
      schema: {
        tags: TAGS,
        operationId: 'getWebhooks',
        summary: 'List webhooks',
        querystring: ListWebhooksQuery,
        response: responses({ 200: listDocument(ref(Webhook)) }, COMMON_ERRORS),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const { rows, total } = await listWebhooks(ctx.db, { clientId: req.client.id, page });
      return {
        data: rows.map((w) => render(w)),
        meta: { total, ...page },
        links: pageLinks(base, req.url, page, total),
      };
    },
  );

  app.get(
    '/api/v1/webhooks/:webhookId',
    {
      schema: {
        tags: TAGS,
        operationId: 'getWebhook',
        summary: 'Get a webhook',
        params: idParams('webhookId'),
        querystring: NoQuery,
        response: responses({ 200: document(ref(Webhook)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => ({
      data: render(await getWebhook(ctx.db, { clientId: req.client.id, webhookId: req.params.webhookId })),
    }),
  );

  app.patch(
    '/api/v1/webhooks/:webhookId',
    {
      schema: {
        tags: TAGS,
        operationId: 'updateWebhook',
        summary: 'Update a webhook',
        description: 'Change `name`, `url`, `topics` or `enabled`. Pending deliveries go to the new URL.',
        params: idParams('webhookId'),
        body: UpdateWebhookBody,
        response: responses({ 200: document(ref(Webhook)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const w = await updateWebhook(ctx.db, {
        clientId: req.client.id,
        webhookId: req.params.webhookId,
        patch: req.body.data.attributes,
        policy,
        now: ctx.clock.now(),
      });
      return { data: render(w) };
    },
  );

  app.delete(
    '/api/v1/webhooks/:webhookId',
    {
      schema: {
        tags: TAGS,
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook',
        description: 'Deliveries not yet made to it are canceled; its delivery history stays readable.',
        params: idParams('webhookId'),
        querystring: NoQuery,
        response: responses({ 204: null }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req, reply) => {
      await deleteWebhook(ctx.db, { clientId: req.client.id, webhookId: req.params.webhookId, now: ctx.clock.now() });
      return reply.code(204).send();
    },
  );

  app.post(
    '/api/v1/webhooks/:webhookId/test',
    {
      schema: {
        tags: TAGS,
        operationId: 'sendTestWebhookEvent',
        summary: 'Send a test event',
        description: 'Creates a `WebhookTest` event delivered to this webhook only, signed like any other.',
        params: idParams('webhookId'),
        querystring: NoQuery,
        response: responses({ 201: document(ref(WebhookEvent)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req, reply) => {
      const event = await sendTestEvent(ctx.db, {
        clientId: req.client.id,
        webhookId: req.params.webhookId,
        now: ctx.clock.now(),
      });
      const { event: e, ...history } = await getEvent(ctx.db, { clientId: req.client.id, eventId: event.id });
      return reply.code(201).send({ data: eventResource(e, base, history) });
    },
  );
}
