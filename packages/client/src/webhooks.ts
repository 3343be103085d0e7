// Verifying a webhook delivery (docs/adr/0006-events-in-an-outbox.md): the hex HMAC-SHA256 of the raw body in
// x-service-signature, and the Standard Webhooks headers (webhook-id, webhook-timestamp,
// webhook-signature), which also bound the delivery's age.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

export interface WebhookEvent {
  data: {
    id: string;
    type: 'WebhookEvent';
    attributes: { topic: string; clientId: string; userId?: string; walletId?: string; createdAt: string };
    relationships: unknown;
  };
  included: { id: string; type: string; attributes?: Record<string, unknown> }[];
}

export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
}

const keyOf = (secret: string) => Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');

/**
 * Verifies a delivery and returns the parsed event; throws WebhookVerificationError (answer 401)
 * otherwise. Pass the raw body exactly as received, before any JSON parsing.
 */
export function verifyWebhook(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  rawBody: string | Buffer,
  opts: { toleranceSeconds?: number } = {},
): WebhookEvent {
  const h = (name: string) => {
    const v = headers[name] ?? headers[name.toLowerCase()];
    return Array.isArray(v) ? v[0] : v;
  };
  const body = typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8');
  const signature = h('x-service-signature') ?? '';
  const expected = createHmac('sha256', keyOf(secret)).update(body).digest();
  const given = Buffer.from(signature, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    throw new WebhookVerificationError('x-service-signature does not match');
  try {
    const wh = new Webhook(keyOf(secret).toString('base64'));
    // standardwebhooks checks a 5-minute window itself; a custom tolerance is checked here.
    const id = h('webhook-id') ?? '';
    const ts = h('webhook-timestamp') ?? '';
    const sig = h('webhook-signature') ?? '';
    if (opts.toleranceSeconds !== undefined && Math.abs(Date.now() / 1000 - Number(ts)) > opts.toleranceSeconds)
      throw new Error('too old');
    return wh.verify(body, { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': sig }) as WebhookEvent;
  } catch (err) {
    throw new WebhookVerificationError(`Standard Webhooks check failed: ${(err as Error).message}`);
  }
}
