// The webhook delivery worker. Each round claims due deliveries (SKIP LOCKED + lease, so any
// number of workers and processes share the work without sending one attempt twice), sends
// them outside any database transaction, and records every attempt. 2xx within the timeout is
// success; anything else is retried on the schedule of decisions §10 with up to 10% jitter,
// then the delivery is marked failed. Redirects are not followed.
import { createHmac, randomInt } from 'node:crypto';
import { isIP } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import { uuidv7 } from 'uuidv7';
import type { Clock } from '../../clock.ts';
import type { Sealer } from '../../crypto/sealer.ts';
import type { Db } from '../../db/open.ts';
import { isPublicAddress, publicOnlyLookup, type LookupFn } from '../webhooks/url-policy.ts';
import { claimDueDeliveries, recordAttempt, type ClaimedDelivery } from './sql.ts';

export interface DispatcherOptions {
  db: Db;
  clock: Clock;
  log: FastifyBaseLogger;
  sealer: Sealer;
  timeoutMs: number;
  retryDelaysS: number[];
  /** Refuse non-public receivers at connect time (live). */
  publicOnly: boolean;
  concurrency: number;
  batchSize?: number;
  /** Replaces DNS resolution (tests). */
  lookup?: LookupFn;
}

/** Headers for one attempt: the spec's x-service-signature plus the Standard Webhooks trio. */
export function signatureHeaders(secret: string, eventId: string, body: string, at: Date): Record<string, string> {
  // The key is the bytes the base64 part of the secret decodes to (decisions §10).
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return {
    'x-service-signature': createHmac('sha256', key).update(body).digest('hex'),
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(eventId, at, body),
  };
}

/** The delay before the next attempt after `failedAttempts` failures, or null when out of retries. */
export function retryDelayMs(delaysS: number[], failedAttempts: number): number | null {
  const base = delaysS[failedAttempts - 1];
  if (base === undefined) return null;
  return Math.round(base * 1000 * (1 + randomInt(0, 1001) / 10_000));
}

export class WebhookDispatcher {
  readonly #o: DispatcherOptions;
  readonly #agent: Agent;

  constructor(opts: DispatcherOptions) {
    this.#o = opts;
    const lookup = opts.publicOnly ? publicOnlyLookup(opts.lookup) : opts.lookup;
    this.#agent = new Agent({
      connections: 64,
      keepAliveTimeout: 10_000,
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
      connect: { timeout: opts.timeoutMs, ...(lookup ? { lookup: lookup as never } : {}) },
    });
  }

  /** Delivers everything due now, batch after batch; returns how many attempts were made. */
  async runOnce(): Promise<number> {
    const batch = this.#o.batchSize ?? 100;
    let total = 0;
    for (let round = 0; round < 100; round++) {
      const now = this.#o.clock.now();
      // The lease outlives the attempt's timeout by a margin; a worker that dies mid-attempt
      // delays that delivery's retry by at most this much.
      const claimed = await claimDueDeliveries(this.#o.db, now, new Date(now.getTime() + this.#o.timeoutMs + 5_000), batch);
      if (claimed.length === 0) break;
      await mapLimit(claimed, this.#o.concurrency, (d) => this.#deliver(d));
      total += claimed.length;
      if (claimed.length < batch) break;
    }
    return total;
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }

  async #deliver(d: ClaimedDelivery): Promise<void> {
    const startedAt = this.#o.clock.now();
    const started = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    let excerpt: string | null = null;
    if (!d.webhookActive) {
      error = 'webhook disabled or deleted';
    } else {
      try {
        const host = new URL(d.url).hostname.replace(/^\[|\]$/g, '');
        if (this.#o.publicOnly && isIP(host) && !isPublicAddress(host)) throw new Error(`${host} is not a public address`);
        const secret = this.#o.sealer.open(d.secretSealed, 'webhook-secret').toString('utf8');
        const res = await request(d.url, {
          method: 'POST',
          dispatcher: this.#agent,
          headers: {
            'content-type': 'application/json',
            'user-agent': 'Coffer-Webhooks/1.0',
            // The signature timestamp is wall-clock time: receivers check freshness against
            // their own clocks, whatever time the domain runs on.
            ...signatureHeaders(secret, d.eventId, d.body, new Date()),
          },
          body: d.body,
          signal: AbortSignal.timeout(this.#o.timeoutMs),
        });
        statusCode = res.statusCode;
        excerpt = await readExcerpt(res.body);
        if (statusCode < 200 || statusCode >= 300) error = `receiver answered ${statusCode}`;
      } catch (err) {
        error = describe(err, this.#o.timeoutMs);
      }
    }
    const ok = error === null;
    const now = this.#o.clock.now();
    const delay = ok || !d.webhookActive ? null : retryDelayMs(this.#o.retryDelaysS, d.attempt);
    const state = ok ? 'succeeded' : !d.webhookActive ? 'canceled' : delay === null ? 'failed' : 'pending';
    try {
      await this.#o.db.transaction((tx) =>
        recordAttempt(
          tx,
          {
            deliveryId: d.id,
            eventId: d.eventId,
            clientId: d.clientId,
            attempt: d.attempt,
            startedAt,
            durationMs: Math.round(performance.now() - started),
            statusCode,
            error,
            responseExcerpt: excerpt,
            state,
            nextAttemptAt: delay === null ? null : new Date(now.getTime() + delay),
            now,
          },
          uuidv7(),
        ),
      );
    } catch (err) {
      // The lease runs out and the attempt is made again: at-least-once, never lost.
      this.#o.log.error({ err, deliveryId: d.id }, 'could not record a webhook attempt');
    }
  }
}

async function readExcerpt(body: AsyncIterable<Buffer> & { dump?: () => Promise<void> }): Promise<string | null> {
  let text = '';
  for await (const chunk of body) {
    if (text.length < 500) text += chunk.toString('utf8');
    if (text.length >= 2000) break;
  }
  await body.dump?.().catch(() => {});
  return text.length > 0 ? text.slice(0, 500) : null;
}

function describe(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT') {
    return `no answer within ${timeoutMs} ms`;
  }
  const code = e.cause?.code ?? e.code;
  const message = e.cause?.message ?? e.message ?? String(err);
  return code ? `${code}: ${message}` : message;
}

async function mapLimit<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  });
  await Promise.all(workers);
}
