// Rate limiting, counted across every process that shares one database: per source address on
// every listener, per merchant on the API, and what a route counts itself (the widget host's
// user check, per wallet).
//
// @fastify/rate-limit does the hook, the headers and the 429; this store does the counting.
// Writing a row per request would cost a database round trip on every call, so each process
// counts locally and every RATE_LIMIT_SYNC_MS adds its new counts to a shared UNLOGGED table
// (one upsert for all active keys) and reads back the totals of every process. A request is
// admitted while (last known total + local unsynced count) < limit. Across N processes the
// limit can be overshot by at most what the other processes admit within one sync interval.
// Windows are fixed and aligned to the epoch, so every process agrees on where they start.
import rateLimit from '@fastify/rate-limit';
import { sql } from 'drizzle-orm';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { rowsOf, type Executor } from '../db/open.ts';
import { apiError } from './errors.ts';
import type { App } from './server.ts';

interface Counter {
  windowStart: number;
  /** Set while the first request of this window reads the shared total. */
  loading?: Promise<void>;
  /** Total across all processes as of the last sync (includes our synced counts). */
  shared: number;
  /** Our counts not yet written. */
  unsynced: number;
}

type IncrCallback = (err: Error | null, res: { current: number; ttl: number }) => void;

export class SharedRateLimitStore {
  readonly #counters = new Map<string, Counter>();
  readonly #db: Executor;
  readonly #clock: Clock;
  readonly #log: FastifyBaseLogger;
  readonly #windowMs: number;
  readonly #prefix: string;
  #timer: NodeJS.Timeout | undefined;
  #syncing: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  #lastCleanup = 0;

  constructor(opts: {
    db: Executor;
    clock: Clock;
    log: FastifyBaseLogger;
    windowMs: number;
    syncIntervalMs: number;
    prefix: string;
  }) {
    this.#db = opts.db;
    this.#clock = opts.clock;
    this.#log = opts.log;
    this.#windowMs = opts.windowMs;
    this.#prefix = opts.prefix;
    this.#timer = setInterval(() => void this.sync(), opts.syncIntervalMs);
    this.#timer.unref();
  }

  /**
   * The interface @fastify/rate-limit calls for each request. The first request of a window
   * from an address this process has not seen reads the shared total (other processes may
   * have counted it already); later ones are answered from memory.
   */
  incr(key: string, cb: IncrCallback): void {
    const now = this.#clock.now().getTime();
    const windowStart = now - (now % this.#windowMs);
    let c = this.#counters.get(key);
    if (!c || c.windowStart !== windowStart) {
      const fresh: Counter = { windowStart, shared: 0, unsynced: 0 };
      fresh.loading = this.#readShared(key, windowStart).then((n) => {
        fresh.shared = Math.max(fresh.shared, n);
        fresh.loading = undefined;
      });
      this.#counters.set(key, fresh);
      c = fresh;
    }
    c.unsynced += 1;
    if (c.loading) {
      const counter = c;
      void c.loading.then(() =>
        cb(null, { current: counter.shared + counter.unsynced, ttl: windowStart + this.#windowMs - now }),
      );
    } else {
      // Answered at once, with no closure: each request passes here once or twice, and a closure
      // made per call costs more than the count (under tsx, a property definition for its name).
      cb(null, { current: c.shared + c.unsynced, ttl: windowStart + this.#windowMs - now });
    }
  }

  async #readShared(key: string, windowStart: number): Promise<number> {
    try {
      const rows = rowsOf<{ count: number }>(
        await this.#db.execute(
          sql`select count from rate_limit_counters where key = ${this.#prefix + key} and window_start = ${windowStart}::bigint`,
        ),
      );
      return Number(rows[0]?.count ?? 0);
    } catch (err) {
      this.#log.warn({ err }, 'rate limit read failed; counting locally');
      return 0;
    }
  }

  child(): this {
    return this;
  }

  /**
   * Writes local counts and learns everyone's totals. Runs on a timer; close() and tests call it
   * directly. A sync already running may have started before the latest counts, so a caller
   * then waits for one more that follows it (at most one is queued).
   */
  sync(): Promise<void> {
    if (!this.#syncing) {
      this.#syncing = this.#sync().finally(() => {
        this.#syncing = undefined;
      });
      return this.#syncing;
    }
    this.#queued ??= this.#syncing.then(() => {
      this.#queued = undefined;
      return this.sync();
    });
    return this.#queued;
  }

  async #sync(): Promise<void> {
    const now = this.#clock.now().getTime();
    const current = now - (now % this.#windowMs);
    const batch: { key: string; delta: number; counter: Counter }[] = [];
    for (const [key, c] of this.#counters) {
      if (c.windowStart < current && c.unsynced === 0) {
        this.#counters.delete(key);
        continue;
      }
      // A zero delta still reads back the shared total; a finished window's last counts are
      // still written so the table stays true.
      batch.push({ key, delta: c.unsynced, counter: c });
    }
    if (batch.length === 0) return;
    try {
      for (let i = 0; i < batch.length; i += 500) {
        const chunk = batch.slice(i, i + 500);
        const values = sql.join(
          chunk.map((b) => sql`(${this.#prefix + b.key}, ${b.counter.windowStart}::bigint, ${b.delta}::int)`),
          sql`, `,
        );
        const res = await this.#db.execute(sql`
          insert into rate_limit_counters as r (key, window_start, count) values ${values}
          on conflict (key, window_start) do update set count = r.count + excluded.count
          returning key, window_start, count`);
        const totals = new Map<string, number>();
        for (const row of rowsOf<{ key: string; window_start: number; count: number }>(res)) {
          totals.set(`${row.key}\u0000${Number(row.window_start)}`, Number(row.count));
        }
        for (const b of chunk) {
          b.counter.unsynced -= b.delta;
          const total = totals.get(`${this.#prefix + b.key}\u0000${b.counter.windowStart}`);
          if (total !== undefined) b.counter.shared = total;
        }
      }
      for (const [key, c] of this.#counters)
        if (c.windowStart < current && c.unsynced === 0) this.#counters.delete(key);
      if (now - this.#lastCleanup > this.#windowMs) {
        this.#lastCleanup = now;
        // Only this store's keys: other stores may count over longer windows.
        await this.#db.execute(
          sql`delete from rate_limit_counters where starts_with(key, ${this.#prefix}) and window_start < ${current - this.#windowMs}::bigint`,
        );
      }
    } catch (err) {
      // Counting goes on locally; the next sync writes what this one could not.
      this.#log.warn({ err }, 'rate limit sync failed');
    }
  }

  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.sync();
  }

  /** Counts one request for `key` now; resolves with the window's count so far and the ms left in it. */
  count(key: string): Promise<{ current: number; ttl: number }> {
    return new Promise((resolve, reject) => this.incr(key, (err, res) => (err ? reject(err) : resolve(res))));
  }
}

const MINUTE_MS = 60_000;

declare module 'fastify' {
  interface FastifyInstance {
    /** The listener's rate-limit store (registerRateLimit). */
    rateLimitStore: SharedRateLimitStore;
  }
}

/**
 * Per source address over every route of a listener (the plugin's hook, headers and 429), in
 * a store of its own (`name` keeps its keys apart from the other listeners'). Returns the store.
 */
export async function registerRateLimit(
  app: App,
  ctx: { db: Executor; clock: Clock; log: FastifyBaseLogger; config: Pick<Config, 'rateLimit' | 'environment'> },
  opts: { name: string; perMinute: number },
): Promise<SharedRateLimitStore> {
  const store = new SharedRateLimitStore({
    db: ctx.db,
    clock: ctx.clock,
    log: ctx.log,
    windowMs: MINUTE_MS,
    syncIntervalMs: ctx.config.rateLimit.syncIntervalMs,
    prefix: `${ctx.config.environment}:${opts.name}:`,
  });
  await app.register(rateLimit, {
    global: false,
    max: opts.perMinute,
    timeWindow: MINUTE_MS,
    enableDraftSpec: true,
    store: class {
      // @fastify/rate-limit constructs its store; every listener shares the one made above.
      constructor() {
        // biome-ignore lint/correctness/noConstructorReturn: hands back the shared store
        return store;
      }
    } as never,
    errorResponseBuilder: (_req, c) =>
      limitExceeded(`More than ${c.max} requests in a minute from this address`, c.ttl),
  });
  app.addHook('onRequest', app.rateLimit());
  app.addHook('onClose', () => store.close());
  app.decorate('rateLimitStore', store);
  return store;
}

/**
 * A further limit on a listener with registerRateLimit, keyed by `key` (a merchant; a route and
 * an address), counted in the listener's store. An onRequest hook: place it after whatever
 * `key` reads (the client auth hook for a merchant). The plugin runs one of its own limits per
 * request, so this one is counted here; the address's RateLimit-* headers stay as they are.
 */
export function keyedRateLimit(
  app: App,
  opts: { perMinute: number; key: (req: FastifyRequest) => string; what: string },
) {
  const store = app.rateLimitStore;
  return (req: FastifyRequest, _reply: unknown, done: (err?: Error) => void) => {
    store.incr(opts.key(req), (err, res) => {
      if (err) return done(err);
      done(
        res.current > opts.perMinute
          ? limitExceeded(`More than ${opts.perMinute} requests in a minute ${opts.what}`, res.ttl)
          : undefined,
      );
    });
  };
}

export function limitExceeded(what: string, ttlMs: number) {
  const seconds = Math.max(1, Math.ceil(ttlMs / 1000));
  return apiError('RateLimitExceeded', `${what}; retry in ${seconds} s.`, {
    headers: { 'retry-after': String(seconds) },
  });
}
