import type { WebhookRow } from './sql.ts';
import { isoTime } from '../../timestamps.ts';

/** A webhook as the merchant reads it: its signing `secret` included (Accrue's Webhook requires it on every read). */
export function webhookResource(w: WebhookRow, baseUrl: string, secret: string) {
  return {
    id: w.id,
    type: 'Webhook' as const,
    attributes: {
      name: w.name,
      url: w.url,
      topics: w.topics,
      enabled: w.enabled,
      secret,
      createdAt: isoTime(w.createdAt),
      updatedAt: isoTime(w.updatedAt),
    },
    links: { self: `${baseUrl}/api/v1/webhooks/${w.id}` },
  };
}
