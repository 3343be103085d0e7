// The webhook delivery worker. It claims due deliveries as slots free up (SKIP LOCKED + lease, so any
// number of workers and processes share the work without sending one attempt twice), sends
// them outside any database transaction, and records every attempt. 2xx within the timeout is
// success; anything else is retried on the schedule of decisions §10 with up to 10% jitter,
// then the delivery is marked failed. Redirects are not followed.
import { createHmac, randomInt } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { isIP } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import { uuidv7 } from '../../ids.ts';
import type { Clock } from '../../clock.ts';
import type { Sealer } from '../../crypto/sealer.ts';
import type { Db } from '../../db/open.ts';
import { isPublicAddress, publicOnlyLookup, type LookupFn } from '../webhooks/url-policy.ts';
import { isRetryableDatabaseError } from '../../db/errors.ts';
import { claimDueDeliveries, recordAttempt, type AttemptOutcome, type ClaimedDelivery } from './sql.ts';

/** How long a lease outlasts the attempt's timeout: time to record the attempt. */
const LEASE_MARGIN_MS = 5_000;

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
  /** How long to wait before looking for newly due deliveries while attempts are in flight. */
  pollMs: number;
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
  /** Attempts in flight in this process, by webhook id. */
  readonly #inFlight = new Map<string, number>();
  /** Webhooks whose last attempt from this process failed. */
  readonly #failing = new Set<string>();

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

  /**
   * Delivers everything due, keeping up to `concurrency` attempts in flight and claiming more
   * as slots free up: a receiver that hangs holds only its own slots until the timeout, never a
   * whole batch. One webhook gets at most half the slots; one whose last attempt here failed
   * (down, hanging, erroring) gets one attempt at a time until one succeeds, so its backlog
   * cannot fill the slots.
   * Returns the number of attempts made, once nothing is in flight and nothing more is due.
   */
  async runOnce(): Promise<number> {
    const { concurrency, pollMs } = this.#o;
    // Claim when half of the slots are free (one statement per many deliveries).
    const refill = Math.max(1, Math.floor(concurrency / 2));
    let running = 0;
    let total = 0;
    let lookAgain = true;
    let drained = false; // the last claim found fewer than it could take
    let settled = 0; // attempts finished so far
    let settledAtClaim = -1; // how many had finished when the last claim was made
    let wake: (() => void) | undefined;
    for (;;) {
      const free = concurrency - running;
      if (free > 0 && (lookAgain || free >= refill || running === 0)) {
        const now = this.#o.clock.now();
        settledAtClaim = settled;
        // The lease outlives the attempt's timeout by a margin for recording it; a worker that
        // dies mid-attempt delays that delivery's retry by at most this much.
        const deliveries = await claimDueDeliveries(this.#o.db, {
          now,
          leaseUntil: new Date(now.getTime() + this.#o.timeoutMs + LEASE_MARGIN_MS),
          limit: free,
          room: this.#room(),
          share: this.#share,
        });
        for (const d of deliveries) {
          running++;
          this.#inFlight.set(d.webhookId, (this.#inFlight.get(d.webhookId) ?? 0) + 1);
          const settle = () => {
            running--;
            settled++;
            const left = (this.#inFlight.get(d.webhookId) ?? 1) - 1;
            if (left > 0) this.#inFlight.set(d.webhookId, left);
            else this.#inFlight.delete(d.webhookId);
            wake?.();
          };
          this.#deliver(d).then(settle, (err: unknown) => {
            this.#o.log.error({ err, deliveryId: d.id }, 'webhook attempt failed unexpectedly');
            settle();
          });
        }
        total += deliveries.length;
        drained = deliveries.length < free;
        lookAgain = false;
      }
      // Done when nothing is in flight and nothing was due at a claim made after the last
      // attempt finished (an attempt finishing during a claim may have made room for more).
      if (running === 0) {
        if (drained && settled === settledAtClaim) break;
        continue;
      }
      // Wait for a slot; when nothing more was due, also look again after a poll interval so
      // new events do not wait for a slow attempt to end.
      await new Promise<void>((resolve) => {
        const timer = drained ? setTimeout(() => ((lookAgain = true), resolve()), pollMs) : undefined;
        wake = () => {
          wake = undefined;
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return total;
  }

  /** The most attempts one healthy webhook may have in flight here: half the slots. */
  get #share(): number {
    return Math.max(1, Math.ceil(this.#o.concurrency / 2));
  }

  /** Room for further attempts of the webhooks with attempts in flight or failing here. */
  #room(): Record<string, number> {
    const room: Record<string, number> = {};
    for (const [id, n] of this.#inFlight) room[id] = Math.max(0, this.#share - n);
    for (const id of this.#failing) room[id] = this.#inFlight.has(id) ? 0 : 1;
    return room;
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
        const secret = this.#o.sealer.open(d.secretSealed, 'webhook-secret', `webhooks:${d.webhookId}`).toString('utf8');
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
    if (ok || !d.webhookActive) this.#failing.delete(d.webhookId);
    else this.#failing.add(d.webhookId);
    const now = this.#o.clock.now();
    const delayMs = ok || !d.webhookActive ? null : retryDelayMs(this.#o.retryDelaysS, d.attempt);
    const state = ok ? 'succeeded' : !d.webhookActive ? 'canceled' : delayMs === null ? 'failed' : 'pending';
    const outcome: AttemptOutcome = {
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
      nextAttemptAt: delayMs === null ? null : new Date(now.getTime() + delayMs),
      now,
    };
    // The database may be away for a moment (a restart, a failover): keep trying while the
    // lease holds, so a delivery that reached its receiver is not sent again. Past the lease,
    // another worker may take it, and the attempt is made again: at-least-once, never lost.
    const attemptId = uuidv7();
    const recordBy = started + this.#o.timeoutMs + LEASE_MARGIN_MS - 1_000;
    for (let wait = 100; ; wait = Math.min(wait * 2, 1_000)) {
      try {
        await this.#o.db.transaction((tx) => recordAttempt(tx, outcome, attemptId));
        return;
      } catch (err) {
        if (!isRetryableDatabaseError(err) || performance.now() + wait > recordBy) {
          this.#o.log.error({ err, deliveryId: d.id }, 'could not record a webhook attempt');
          return;
        }
        await delay(wait);
      }
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
