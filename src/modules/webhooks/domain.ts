// Webhook registration: receivers, their topics and their signing secrets.
import { randomBytes } from 'node:crypto';
import { uuidv7 } from '../../ids.ts';
import type { Sealer } from '../../crypto/sealer.ts';
import type { Db, Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import type { Page } from '../../http/paging.ts';
import { recordEvent } from '../events/record.ts';
import { cancelPendingDeliveries } from '../events/sql.ts';
import { TEST_TOPIC } from '../events/topics.ts';
import { checkWebhookUrl } from './url-policy.ts';
import * as q from './sql.ts';

export interface WebhookPolicy {
  /** Receivers may be on loopback or private networks (WEBHOOK_ALLOW_PRIVATE, local development). */
  allowPrivate: boolean;
  /** Webhooks one merchant may have (WEBHOOK_MAX_PER_MERCHANT). */
  maxPerMerchant: number;
}

function checkTopics(topics: string[] | undefined): void {
  if (topics?.includes('*') && topics.length > 1) {
    throw apiError('InvalidTopics', '`topics` must be ["*"] alone or a list of topics.', {
      pointer: '/data/attributes/topics',
    });
  }
}

/** An empty url is a webhook without a receiver: its events are recorded, nothing is sent (Accrue's CreateWebhook). */
function checkUrl(url: string | undefined, policy: Pick<WebhookPolicy, 'allowPrivate'>): void {
  if (url === undefined || url === '') return;
  const problem = checkWebhookUrl(url, policy);
  if (problem) throw apiError('ValidationError', `\`url\` ${problem.detail}.`, { pointer: '/data/attributes/url' });
}

/**
 * Registers a webhook. A merchant has at most `policy.maxPerMerchant` (each event becomes one
 * POST per subscribed webhook, so the number is what one event can cost).
 */
export async function createWebhook(
  db: Db,
  opts: {
    clientId: string;
    name: string;
    url?: string;
    topics: string[];
    enabled?: boolean;
    policy: WebhookPolicy;
    sealer: Sealer;
    now: Date;
  },
): Promise<{ webhook: q.WebhookRow; secret: string }> {
  checkTopics(opts.topics);
  checkUrl(opts.url, opts.policy);
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const id = uuidv7();
  const webhook = await db.transaction(async (tx) => {
    const max = opts.policy.maxPerMerchant;
    if ((await q.countWebhooksLocked(tx, opts.clientId)) >= max) {
      throw apiError(
        'WebhookLimitReached',
        `A merchant can have at most ${max} webhooks; delete one (or subscribe an existing one to more topics) first.`,
      );
    }
    return q.insertWebhook(tx, {
      id,
      clientId: opts.clientId,
      name: opts.name,
      url: opts.url ?? '',
      topics: opts.topics,
      enabled: opts.enabled ?? true,
      secretSealed: opts.sealer.seal(secret, 'webhook-secret', `webhooks:${id}`),
      createdAt: opts.now,
      updatedAt: opts.now,
    });
  });
  return { webhook, secret };
}

export async function getWebhook(db: Executor, opts: { clientId: string; webhookId: string }): Promise<q.WebhookRow> {
  const w = await q.findWebhook(db, opts.clientId, opts.webhookId);
  if (!w) throw apiError('WebhookNotFound', `No webhook ${opts.webhookId}.`);
  return w;
}

export async function listWebhooks(db: Executor, opts: { clientId: string; page: Page }) {
  return q.listWebhookRows(db, opts.clientId, opts.page);
}

/** Updates a webhook. Emptying its url stops sending: deliveries not yet made are canceled. */
export async function updateWebhook(
  db: Db,
  opts: {
    clientId: string;
    webhookId: string;
    patch: { name?: string; url?: string; topics?: string[]; enabled?: boolean };
    policy: Pick<WebhookPolicy, 'allowPrivate'>;
    now: Date;
  },
): Promise<q.WebhookRow> {
  checkTopics(opts.patch.topics);
  checkUrl(opts.patch.url, opts.policy);
  return db.transaction(async (tx) => {
    const w = await q.updateWebhookRow(tx, opts.clientId, opts.webhookId, { ...opts.patch, updatedAt: opts.now });
    if (!w) throw apiError('WebhookNotFound', `No webhook ${opts.webhookId}.`);
    if (w.url === '') await cancelPendingDeliveries(tx, w.id, opts.now);
    return w;
  });
}

/** Refuses to send to a webhook that cannot receive: disabled, or without a url. */
export function checkReceives(w: q.WebhookRow, pointer?: string): void {
  if (!w.enabled)
    throw apiError('IllegalOperation', 'The webhook is disabled; enable it to send to it.', pointer ? { pointer } : {});
  if (w.url === '')
    throw apiError(
      'IllegalOperation',
      'The webhook has no url: its events are recorded but nothing is sent. Set a url to send to it.',
      pointer ? { pointer } : {},
    );
}

/** Deletes a webhook; deliveries not yet made to it are canceled. Its history stays readable. */
export async function deleteWebhook(db: Db, opts: { clientId: string; webhookId: string; now: Date }): Promise<void> {
  await db.transaction(async (tx) => {
    const w = await q.updateWebhookRow(tx, opts.clientId, opts.webhookId, {
      deletedAt: opts.now,
      enabled: false,
      updatedAt: opts.now,
    });
    if (!w) throw apiError('WebhookNotFound', `No webhook ${opts.webhookId}.`);
    await cancelPendingDeliveries(tx, w.id, opts.now);
  });
}

/** Sends a WebhookTest event to this webhook only (whatever its topics). */
export async function sendTestEvent(db: Db, opts: { clientId: string; webhookId: string; now: Date }) {
  return db.transaction(async (tx) => {
    const w = await getWebhook(tx, opts);
    checkReceives(w);
    return recordEvent(
      tx,
      {
        clientId: opts.clientId,
        topic: TEST_TOPIC,
        resource: { id: w.id, type: 'Webhook', attributes: { name: w.name, url: w.url } },
        now: opts.now,
      },
      { onlyWebhookId: w.id },
    );
  });
}
