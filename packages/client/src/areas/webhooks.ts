import { type Api, type Attributes, body, type Query, unwrap } from './shared.ts';

export const webhooks = (api: Api) => ({
  create: (a: Attributes<'/api/v1/webhooks'>) =>
    unwrap(api.POST('/api/v1/webhooks', { body: body('Webhook', a) as never })).then((r) => r.data),
  remove: (webhookId: string) =>
    unwrap(api.DELETE('/api/v1/webhooks/{webhookId}', { params: { path: { webhookId } } })),
});

/** The events sent to your webhooks, and their deliveries. */
export const events = (api: Api) => ({
  /** One page, newest first, with `meta.total` (`coffer.paginate` walks them all). */
  list: (query: Query<'listWebhookEvents'> = {}) => unwrap(api.GET('/api/v1/webhook-events', { params: { query } })),
  get: (eventId: string) =>
    unwrap(api.GET('/api/v1/webhook-events/{eventId}', { params: { path: { eventId } } })).then((r) => r.data),
  /** Deliver the event again: to every subscribed webhook, or to `webhookId` only. */
  replay: (eventId: string, a: Attributes<'/api/v1/webhook-events/{eventId}/replay'> = {}) =>
    unwrap(
      api.POST('/api/v1/webhook-events/{eventId}/replay', {
        params: { path: { eventId } },
        body: body('WebhookEventReplay', a),
      }),
    ).then((r) => r.data),
});
