// The webhook delivery worker. It claims due deliveries as slots free up (SKIP LOCKED + lease, so any
// number of workers and processes share the work without sending one attempt twice), sends
// them outside any database transaction, and records every attempt. 2xx within the timeout is
// success; anything else is retried on the schedule of docs/adr/0006-events-in-an-outbox.md with up to 10% jitter,
// then the delivery is marked failed. Redirects are not followed.
//
// Receivers are reached through one of two connection pools. The public pool connects only to
// public addresses (every DNS answer is checked, and so is the address the socket connected
// to), and only its answers are kept as excerpts. The private pool exists only when the
// operator allows private receivers (WEBHOOK_ALLOW_PRIVATE, local development): it takes
// receivers whose address is not public, and of their attempts only whether the delivery was
// taken is kept (no status, timing, answer or error), so a sandbox cannot be used to read or
// map internal services.
import { createHmac, randomInt } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { isIP } from 'node:net';
import type { LookupAddress } from 'node:dns';
import type { FastifyBaseLogger } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { Agent, buildConnector, request } from 'undici';
import { uuidv7 } from '../../ids.ts';
import type { Clock } from '../../clock.ts';
import type { WebhookGuards } from '../../config.ts';
import type { Sealer } from '../../crypto/sealer.ts';
import type { Db } from '../../db/open.ts';
import {
  hostOf,
  isPublicAddress,
  notPublic,
  publicOnlyLookup,
  systemLookup,
  type LookupFn,
} from '../webhooks/url-policy.ts';
import { isRetryableDatabaseError } from '../../db/errors.ts';
import { groupCommit } from '../../db/groups.ts';
import { ReceiverBreakers } from './breaker.ts';
import { LoopStalls } from './loop-stalls.ts';
import {
  claimDueDeliveries,
  holdDeliveries,
  recordAttempts,
  releaseDeliveries,
  type AttemptOutcome,
  type ClaimedDelivery,
} from './sql.ts';
import { webhookAttempts } from '../../observability/metrics.ts';
import { endSpan, SpanKind, startSpan, tracing } from '../../observability/tracing.ts';

const attemptOutcomes = {
  succeeded: webhookAttempts.labels('succeeded'),
  pending: webhookAttempts.labels('retrying'),
  failed: webhookAttempts.labels('failed'),
  canceled: webhookAttempts.labels('canceled'),
  inconclusive: webhookAttempts.labels('inconclusive'),
};

/** How long a lease outlasts the attempt's timeout: time to record the attempt. */
const LEASE_MARGIN_MS = 5_000;
/**
 * How far ahead of its slots a worker claims: up to this many times its slots (and each
 * merchant's and webhook's share of them) in flight and queued together.
 */
const CLAIM_DEPTH = 8;
/** The longest a claimed delivery waits in the queue (at most the attempt's timeout) before it goes back. */
const MAX_QUEUE_WAIT_MS = 5_000;
/**
 * An attempt that timed out while this process's event loop stood still this long is
 * inconclusive: the timeout may have fired only because the process itself was frozen.
 */
const STALL_MS = 1_000;
/** The error of an attempt to a receiver on a non-public address that did not take the delivery. */
const NOT_DELIVERED = 'not delivered (only that is recorded for a receiver on a non-public address)';

export interface DispatcherOptions extends Omit<WebhookGuards, 'maxPerMerchant'> {
  db: Db;
  clock: Clock;
  log: FastifyBaseLogger;
  sealer: Sealer;
  timeoutMs: number;
  retryDelaysS: number[];
  concurrency: number;
  /** How long to wait before looking for newly due deliveries while attempts are in flight. */
  pollMs: number;
  /** Replaces DNS resolution (tests). */
  lookup?: LookupFn;
  /** Replaces the test of a public address (tests: a receiver on loopback standing for a public one). */
  isPublicAddress?: (address: string) => boolean;
}

/** Headers for one attempt: the spec's x-service-signature plus the Standard Webhooks trio. */
function signatureHeaders(secret: string, eventId: string, body: string, at: Date): Record<string, string> {
  // The key is the bytes the base64 part of the secret decodes to (docs/adr/0006-events-in-an-outbox.md).
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return {
    'x-service-signature': createHmac('sha256', key).update(body).digest('hex'),
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(eventId, at, body),
  };
}

/** The delay before the next attempt after `failedAttempts` failures, or null when out of retries. */
function retryDelayMs(delaysS: number[], failedAttempts: number): number | null {
  const base = delaysS[failedAttempts - 1];
  if (base === undefined) return null;
  return Math.round(base * 1000 * (1 + randomInt(0, 1001) / 10_000));
}

export class WebhookDispatcher {
  readonly #o: DispatcherOptions;
  readonly #isPublic: (address: string) => boolean;
  /** Connections to public addresses only; their answers may be kept. */
  readonly #public: Agent;
  /** Connections to any address, when private receivers are allowed; their answers are never kept. */
  readonly #private: Agent | undefined;
  readonly #breakers: ReceiverBreakers;
  /** Attempts in flight in this process, by webhook id. */
  readonly #inFlight = new Map<string, number>();
  /** Attempts in flight in this process, by merchant (client id). */
  readonly #busy = new Map<string, number>();
  /** Webhooks whose last attempt from this process failed. */
  readonly #failing = new Set<string>();
  /**
   * Merchants at their cap whose queued deliveries went back because none of their slots freed
   * in time (hanging receivers): claimed for again only once one of their attempts ends, so
   * their deliveries are not leased here to wait and go back again.
   */
  readonly #stuck = new Set<string>();
  readonly #stalls = new LoopStalls();

  constructor(opts: DispatcherOptions) {
    this.#o = opts;
    const isPublic = (this.#isPublic = opts.isPublicAddress ?? isPublicAddress);
    // Connecting (TCP and TLS) has its own, shorter limit: a host that does not accept
    // connections fails fast instead of holding a slot for the whole answer timeout.
    const timeout = Math.min(opts.connectTimeoutMs, opts.timeoutMs);
    const agent = (connect: buildConnector.connector) =>
      new Agent({
        connections: 64,
        keepAliveTimeout: 10_000,
        headersTimeout: opts.timeoutMs,
        bodyTimeout: opts.timeoutMs,
        connect,
      });
    const guarded = buildConnector({ timeout, lookup: publicOnlyLookup(opts.lookup, isPublic) as never });
    this.#public = agent((o, callback) =>
      guarded(o, (err, socket) => {
        if (err) return callback(err, null);
        // The address connected to, whatever resolved it.
        if (socket.remoteAddress && isPublic(socket.remoteAddress)) return callback(null, socket);
        socket.destroy();
        callback(notPublic(o.hostname), null);
      }),
    );
    this.#private = opts.allowPrivate
      ? agent(buildConnector({ timeout, ...(opts.lookup ? { lookup: opts.lookup as never } : {}) }))
      : undefined;
    this.#breakers = new ReceiverBreakers({ failures: opts.breakerFailures, cooldownMs: opts.breakerCooldownMs });
  }

  /**
   * Delivers everything due, keeping up to `concurrency` attempts in flight. Deliveries are
   * claimed ahead of free slots, up to CLAIM_DEPTH times the slots, into a queue that attempts
   * start from as slots free up; the next claim runs while attempts are in flight, so a slot
   * never waits for a round trip to the database. A queued delivery that cannot start within
   * its queue budget goes back unattempted. A receiver that hangs holds only its own slots
   * until the timeout, never a whole batch. One merchant gets at most `merchantConcurrency`
   * slots, and claims take every merchant's deliveries in turns, so no merchant's backlog or
   * hanging receivers hold up another's: the loop claims every poll interval whatever is in
   * flight, and a merchant stuck at its cap gets nothing claimed until one of its attempts
   * ends. An attempt that timed out while this process stood still goes back, due at once,
   * without counting. One webhook gets at most half the slots; one whose last attempt here
   * failed (down, hanging, erroring) gets one attempt at a time until one succeeds; a host
   * whose breaker is open gets none.
   * Returns the number of attempts made, once nothing is in flight or queued and nothing more
   * is due.
   */
  async runOnce(): Promise<number> {
    this.#stalls.start();
    try {
      return await this.#deliver();
    } finally {
      this.#stalls.stop();
    }
  }

  async #deliver(): Promise<number> {
    const { concurrency, pollMs } = this.#o;
    const merchantCap = Math.min(this.#o.merchantConcurrency, concurrency);
    const queueWaitMs = Math.min(this.#o.timeoutMs, MAX_QUEUE_WAIT_MS);
    const queue: Queued[] = [];
    let running = 0;
    let total = 0;
    let claiming: Promise<void> | undefined;
    let lookAgain = true;
    let drained = false; // the last claim found fewer than it could take
    let settled = 0; // attempts finished so far
    let settledAtClaim = -1; // how many had finished when the last claim was made
    let heldAtClaim = 0; // deliveries in flight and queued just after the last claim
    let wake: (() => void) | undefined;
    const pending = new Set<Promise<void>>(); // recordings and releases not yet written
    const track = (p: Promise<void>) => {
      pending.add(p);
      void p.finally(() => pending.delete(p));
    };

    // Gives deliveries back unattempted: their host's breaker is open or probing, or they
    // waited in the queue past their budget. If this fails, their lease runs out instead.
    // A claim waits for the releases before it, so that it can take what they gave back.
    let released: Promise<unknown> = Promise.resolve();
    const giveBack = (back: Released[], now: Date) => {
      if (back.length === 0) return;
      drained = false; // some may be due again at once
      const release = releaseDeliveries(this.#o.db, back, now).catch((err: unknown) =>
        this.#o.log.error({ err }, 'could not release held webhook deliveries'),
      );
      released = Promise.all([released, release]);
      track(release);
    };

    const launch = ({ d, host }: Queued) => {
      running++;
      count(this.#inFlight, d.webhookId, 1);
      count(this.#busy, d.clientId, 1);
      const settle = () => {
        running--;
        settled++;
        count(this.#inFlight, d.webhookId, -1);
        count(this.#busy, d.clientId, -1);
        this.#stuck.delete(d.clientId);
        wake?.();
      };
      // The slot is the receiver's: it frees when the answer is in, and the attempt is
      // recorded meanwhile. Until then its lease keeps the delivery from being claimed again.
      track(
        this.#attempt(d, host).then(
          (attempt) => {
            settle();
            if (!('inconclusive' in attempt)) return this.#record(attempt);
            // Neither the receiver's failure nor an attempt that counts: it goes back as claimed,
            // due at once (a receiver that got it dedupes on webhook-id).
            attemptOutcomes.inconclusive.inc();
            this.#o.log.warn(
              { deliveryId: d.id, stalledMs: attempt.stalledMs },
              'webhook attempt inconclusive: this process stood still while it was under way; retrying',
            );
            giveBack([d], this.#o.clock.now());
          },
          (err: unknown) => {
            this.#o.log.error({ err, deliveryId: d.id }, 'webhook attempt failed unexpectedly');
            settle();
          },
        ),
      );
    };

    // Starts queued deliveries as far as the slots and caps allow: each free slot goes to the
    // merchant with the fewest attempts in flight, its first delivery in claim order, so one
    // merchant's queue never holds back a delivery claimed for another.
    const startQueued = () => {
      const now = this.#o.clock.now();
      const back: Released[] = [];
      // The queue is in claim order, so its expired deliveries lead it.
      while (queue.length > 0 && now.getTime() >= queue[0]!.startBy) {
        const { d } = queue.shift()!;
        back.push(d);
        if ((this.#busy.get(d.clientId) ?? 0) >= merchantCap) this.#stuck.add(d.clientId);
      }
      while (running < concurrency) {
        let next = -1;
        let fewest = Infinity;
        for (const [i, { d }] of queue.entries()) {
          const busy = this.#busy.get(d.clientId) ?? 0;
          if (busy >= fewest || busy >= merchantCap) continue;
          if ((this.#inFlight.get(d.webhookId) ?? 0) >= (this.#failing.has(d.webhookId) ? 1 : this.#share)) continue;
          next = i;
          fewest = busy;
          if (busy === 0) break;
        }
        if (next < 0) break;
        const [q] = queue.splice(next, 1);
        const { d } = q!;
        // Deliveries to a host whose breaker is open (or being probed) go back without an
        // attempt, so a probe that fails at once holds them too.
        const admission = d.webhookActive ? this.#breakers.admit(q!.host, d, now) : { send: true as const };
        if (!admission.send) {
          back.push({ ...d, until: admission.holdUntil });
          continue;
        }
        launch(q!);
        total++;
      }
      giveBack(back, now);
    };

    const claim = async () => {
      settledAtClaim = settled;
      lookAgain = false;
      await released;
      const now = this.#o.clock.now();
      // What this worker holds already, in flight or queued, counts against the caps; a stuck
      // merchant has no room at all.
      const busy = new Map(this.#busy);
      const held = new Map(this.#inFlight);
      for (const { d } of queue) {
        count(busy, d.clientId, 1);
        count(held, d.webhookId, 1);
      }
      for (const id of this.#stuck) busy.set(id, merchantCap * CLAIM_DEPTH);
      const limit = concurrency * CLAIM_DEPTH - running - queue.length;
      // The lease covers the wait in the queue, the attempt's timeout, and a margin for
      // recording it; a worker that dies delays those deliveries' retry by at most this much.
      const claimed = await claimDueDeliveries(this.#o.db, {
        now,
        leaseUntil: new Date(now.getTime() + queueWaitMs + this.#o.timeoutMs + LEASE_MARGIN_MS),
        limit,
        room: this.#room(now, held),
        share: this.#share * CLAIM_DEPTH,
        busy: Object.fromEntries(busy),
        merchantCap: merchantCap * CLAIM_DEPTH,
      });
      for (const d of claimed) queue.push({ d, host: breakerKey(d), startBy: now.getTime() + queueWaitMs });
      heldAtClaim = running + queue.length;
      // Fewer than asked for: nothing more is due (but for what the caps left out).
      drained = claimed.length < limit;
    };

    for (;;) {
      startQueued();
      // Done when nothing is in flight or queued and nothing was due at a claim made after the
      // last attempt finished (an attempt finishing during a claim may have made room for more).
      if (running === 0 && queue.length === 0 && !claiming && drained && settled === settledAtClaim) break;
      // Claim again once an eighth of what the last claim left held (in flight and queued) has
      // finished: early enough that the queue outlasts the claim's round trip, late enough that
      // one statement takes many deliveries. Also every poll interval, and when nothing is in
      // flight or queued.
      const idle = running === 0 && queue.length === 0;
      const refill = Math.max(1, Math.ceil(heldAtClaim / CLAIM_DEPTH));
      if (
        !claiming &&
        running + queue.length < concurrency * CLAIM_DEPTH &&
        (lookAgain || idle || settled - settledAtClaim >= refill)
      ) {
        claiming = claim()
          .catch((err: unknown) => {
            // Nothing was claimed. A worker with nothing in flight or queued fails, and its job
            // runner retries; one with attempts under way logs it and tries again after a poll
            // interval or the next refill.
            if (idle) throw err;
            this.#o.log.error({ err }, 'could not claim webhook deliveries');
            drained = true;
          })
          .finally(() => {
            claiming = undefined;
            wake?.();
          });
        if (idle) {
          await claiming;
          continue;
        }
      }
      // Wait for a slot or a claim; also look again after a poll interval, whatever is in
      // flight, so new events (another merchant's) never wait for hanging attempts to end; and
      // wake for the first queued delivery to outlive its budget.
      const firstExpiry = queue[0]?.startBy;
      await new Promise<void>((resolve) => {
        const timers: NodeJS.Timeout[] = [];
        wake = () => {
          wake = undefined;
          for (const t of timers) clearTimeout(t);
          resolve();
        };
        if (!claiming)
          timers.push(
            setTimeout(() => {
              lookAgain = true;
              wake?.();
            }, pollMs),
          );
        if (firstExpiry !== undefined)
          timers.push(setTimeout(() => wake?.(), Math.max(0, firstExpiry - this.#o.clock.now().getTime())));
      });
    }
    await Promise.all(pending);
    return total;
  }

  /** The most attempts one healthy webhook may have in flight here: half the slots. */
  get #share(): number {
    return Math.max(1, Math.ceil(this.#o.concurrency / 2));
  }

  /**
   * Room for further claims of the webhooks with deliveries held here (in flight or queued),
   * failing or being probed here.
   */
  #room(now: Date, held: Map<string, number>): Record<string, number> {
    const room: Record<string, number> = {};
    for (const [id, n] of held) room[id] = Math.max(0, this.#share * CLAIM_DEPTH - n);
    for (const id of this.#failing) room[id] = held.has(id) ? 0 : 1;
    for (const id of this.#breakers.probing(now)) room[id] = 0;
    return room;
  }

  async close(): Promise<void> {
    await Promise.all([this.#public.close(), this.#private?.close()]);
  }

  /**
   * Whether to go through the public pool: always, unless private receivers are allowed; then
   * when the URL's address, or every address its name resolves to, is public. Either way the
   * public pool connects only to public addresses, so a name that resolves differently at
   * connect time fails the attempt rather than reaching a private address through it.
   */
  async #viaPublic(host: string, signal: AbortSignal): Promise<boolean> {
    if (!this.#private) return true;
    if (isIP(host)) return this.#isPublic(host);
    const lookup = this.#o.lookup ?? systemLookup;
    const addresses = await new Promise<LookupAddress[]>((resolve, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      lookup(host, { all: true }, (err, list) => resolve(err ? [] : (list as LookupAddress[])));
    });
    return addresses.length > 0 && addresses.every((a) => this.#isPublic(a.address));
  }

  /**
   * Sends one attempt and decides what follows from its answer (nothing is written yet), or
   * finds it inconclusive: it timed out while this process itself stood still.
   */
  async #attempt(d: ClaimedDelivery, host: string): Promise<Attempt | Inconclusive> {
    const startedAt = this.#o.clock.now();
    const started = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    let excerpt: string | null = null;
    let answered = false;
    let nonPublic = false; // sent through the private pool
    let refused = false; // by the address policy, before connecting
    if (!d.webhookActive) {
      error = 'webhook disabled or deleted';
    } else {
      try {
        const url = new URL(d.url);
        const address = hostOf(url);
        const signal = AbortSignal.timeout(this.#o.timeoutMs);
        const viaPublic = await this.#viaPublic(address, signal);
        nonPublic = !viaPublic;
        // An IP literal is checked before connecting (a name, by the pool's DNS guard).
        if (viaPublic && isIP(address) && !this.#isPublic(address)) throw notPublic(address);
        const secret = this.#o.sealer
          .open(d.secretSealed, 'webhook-secret', `webhooks:${d.webhookId}`)
          .toString('utf8');
        const span = tracing.enabled
          ? startSpan('webhook delivery', SpanKind.CLIENT, {
              'coffer.merchant_id': d.clientId,
              'coffer.webhook.attempt': d.attempt,
              'http.request.method': 'POST',
              'server.address': address,
            })
          : undefined;
        const res = await request(url, {
          method: 'POST',
          dispatcher: viaPublic ? this.#public : this.#private!,
          headers: {
            'content-type': 'application/json',
            'user-agent': 'Coffer-Webhooks/1.0',
            // The signature timestamp is wall-clock time: receivers check freshness against
            // their own clocks, whatever time the domain runs on.
            ...signatureHeaders(secret, d.eventId, d.body, new Date()),
          },
          body: d.body,
          signal,
        }).catch((err: unknown) => {
          if (span) endSpan(span, err);
          throw err;
        });
        statusCode = res.statusCode;
        if (span) {
          span.setAttribute('http.response.status_code', statusCode);
          endSpan(span, statusCode >= 300 ? new Error(`receiver answered ${statusCode}`) : undefined);
        }
        // What a receiver on a non-public address answered is never kept or shown.
        if (viaPublic) excerpt = await readExcerpt(res.body);
        else await res.body.dump();
        answered = true;
        if (statusCode < 200 || statusCode >= 300) error = `receiver answered ${statusCode}`;
      } catch (err) {
        // Timers run before sockets are read: after a stall, a timeout fires even if the answer
        // arrived in time and waits in the socket.
        if (timeoutOf(err)) {
          const stalledMs = this.#stalls.longestSince(started);
          if (stalledMs >= STALL_MS) return { inconclusive: true, stalledMs };
        }
        refused = codeOf(err) === 'EADDRNOTALLOWED';
        error = describe(err, this.#o);
      }
    }
    if (nonPublic) {
      // Only whether a receiver on a non-public address took the delivery is kept: its status,
      // how its connection failed and how long it took would map internal services.
      statusCode = null;
      answered = error === null;
      if (error !== null) error = NOT_DELIVERED;
    }
    const ok = error === null;
    if (ok || !d.webhookActive) this.#failing.delete(d.webhookId);
    else this.#failing.add(d.webhookId);
    const now = this.#o.clock.now();
    // A non-public receiver's times (retry, hold, completion) count from the attempt's start,
    // not from when it ended.
    const end = nonPublic ? startedAt : now;
    // No answer at all (not connected, timed out) counts towards the host's breaker; an answer
    // of any status closes it.
    const opened = d.webhookActive ? this.#breakers.record(host, d, answered, end) : undefined;
    const delayMs = ok || !d.webhookActive ? null : retryDelayMs(this.#o.retryDelaysS, d.attempt);
    const state = ok ? 'succeeded' : !d.webhookActive ? 'canceled' : delayMs === null ? 'failed' : 'pending';
    attemptOutcomes[state].inc();
    // While the host's breaker is open, the retry waits for the end of its cool-down.
    const openUntil = this.#breakers.openUntil(host)?.getTime() ?? 0;
    const outcome: AttemptOutcome = {
      deliveryId: d.id,
      eventId: d.eventId,
      clientId: d.clientId,
      attempt: d.attempt,
      leaseUntil: d.leaseUntil,
      startedAt,
      // Nor is how long a refusal took: a name's lookup time tells whether it exists.
      durationMs: nonPublic || refused ? 0 : Math.round(performance.now() - started),
      statusCode,
      error,
      responseExcerpt: excerpt,
      state,
      nextAttemptAt: delayMs === null ? null : new Date(Math.max(end.getTime() + delayMs, openUntil)),
      now: end,
    };
    return { outcome, host, opened, started };
  }

  /** Records an attempt (and holds its host's deliveries if its breaker opened). */
  async #record({ outcome, host, opened, started }: Attempt): Promise<void> {
    if (opened) {
      this.#o.log.warn({ host, until: opened.until }, 'webhook receiver unreachable: holding its deliveries');
      await holdDeliveries(this.#o.db, { ...opened, now: outcome.now }).catch((err: unknown) =>
        this.#o.log.error({ err }, 'could not hold webhook deliveries'),
      );
    }
    // The database may be away for a moment (a restart, a failover): keep trying while the
    // lease holds, so a delivery that reached its receiver is not sent again. Past the lease,
    // another worker may take it, and the attempt is made again: at-least-once, never lost.
    const attemptId = uuidv7();
    const recordBy = started + this.#o.timeoutMs + LEASE_MARGIN_MS - 1_000;
    for (let wait = 100; ; wait = Math.min(wait * 2, 1_000)) {
      try {
        await recordAttempt(this.#o.db, { outcome, id: attemptId });
        return;
      } catch (err) {
        if (!isRetryableDatabaseError(err) || performance.now() + wait > recordBy) {
          this.#o.log.error({ err, deliveryId: outcome.deliveryId }, 'could not record a webhook attempt');
          return;
        }
        await delay(wait);
      }
    }
  }
}

/** A claimed delivery waiting for a slot, and when it must start by (clock ms) or go back. */
interface Queued {
  d: ClaimedDelivery;
  host: string;
  startBy: number;
}

type Released = Parameters<typeof releaseDeliveries>[1][number];

/** An attempt that timed out while this process stood still: it neither failed nor counts. */
interface Inconclusive {
  inconclusive: true;
  stalledMs: number;
}

/** An attempt made and not yet recorded: its outcome, and its host's breaker if it opened. */
interface Attempt {
  outcome: AttemptOutcome;
  host: string;
  opened: ReturnType<ReceiverBreakers['record']>;
  /** performance.now() when it started: the lease's clock. */
  started: number;
}

/**
 * Records finished attempts through the group commit the money writes use (db/groups.ts): the
 * attempts that end during one turn of the event loop are written in one transaction. A
 * transaction per attempt costs four round trips and a commit; a group costs the same for any
 * number of attempts. A failed write fails every attempt of its group, and each retries on its
 * own.
 */
const recordAttempt = groupCommit<{ outcome: AttemptOutcome; id: string }, void>(
  async (db, members) => {
    await db.transaction((tx) => recordAttempts(tx, members));
    for (const m of members) m.resolve();
  },
  { name: 'webhook-attempt' },
);

async function readExcerpt(body: AsyncIterable<Buffer> & { dump?: () => Promise<void> }): Promise<string | null> {
  let text = '';
  for await (const chunk of body) {
    if (text.length < 500) text += chunk.toString('utf8');
    if (text.length >= 2000) break;
  }
  await body.dump?.().catch(() => {});
  return text.length > 0 ? text.slice(0, 500) : null;
}

/** The breaker's key: the merchant and the URL's origin (scheme, host and port). */
function breakerKey(d: ClaimedDelivery): string {
  let origin: string;
  try {
    origin = new URL(d.url).origin;
  } catch {
    origin = d.url;
  }
  return `${d.clientId} ${origin}`;
}

function count(map: Map<string, number>, key: string, by: number): void {
  const n = (map.get(key) ?? 0) + by;
  if (n > 0) map.set(key, n);
  else map.delete(key);
}

type ErrorLike = { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };

function codeOf(err: unknown): string | undefined {
  const e = err as ErrorLike;
  return e.cause?.code ?? e.code;
}

/** Which of the attempt's timers ended it, if one did. */
function timeoutOf(err: unknown): 'answer' | 'connect' | undefined {
  const e = err as ErrorLike;
  if (
    e.name === 'TimeoutError' ||
    e.name === 'AbortError' ||
    e.code === 'UND_ERR_HEADERS_TIMEOUT' ||
    e.code === 'UND_ERR_BODY_TIMEOUT'
  )
    return 'answer';
  if (codeOf(err) === 'UND_ERR_CONNECT_TIMEOUT') return 'connect';
  return undefined;
}

function describe(err: unknown, o: { timeoutMs: number; connectTimeoutMs: number }): string {
  const timeout = timeoutOf(err);
  if (timeout === 'answer') return `no answer within ${o.timeoutMs} ms`;
  if (timeout === 'connect') return `could not connect within ${Math.min(o.connectTimeoutMs, o.timeoutMs)} ms`;
  const e = err as ErrorLike;
  const code = codeOf(err);
  const message = e.cause?.message ?? e.message ?? String(err);
  return code ? `${code}: ${message}` : message;
}
