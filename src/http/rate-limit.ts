// Rate limiting per source IP, counted across every process that shares one database.
//
// @fastify/rate-limit does the hook, the headers and the 429; this store does the counting.
// Writing a row per request would cost a database round trip on every call, so each process
// counts locally and every RATE_LIMIT_SYNC_MS adds its new counts to a shared UNLOGGED table
// (one upsert for all active keys) and reads back the totals of every process. A request is
// admitted while (last known total + local unsynced count) < limit. Across N processes the
// limit can be overshot by at most what the other processes admit within one sync interval.
// Windows are fixed and aligned to the epoch, so every process agrees on where they start.
import { sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.ts';
import { rowsOf, type Executor } from '../db/open.ts';

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

  constructor(opts: { db: Executor; clock: Clock; log: FastifyBaseLogger; windowMs: number; syncIntervalMs: number; prefix: string }) {
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
    const counter = c;
    counter.unsynced += 1;
    const answer = () => cb(null, { current: counter.shared + counter.unsynced, ttl: windowStart + this.#windowMs - now });
    if (counter.loading) void counter.loading.then(answer);
    else answer();
  }

  async #readShared(key: string, windowStart: number): Promise<number> {
    try {
      const rows = rowsOf<{ count: number }>(
        await this.#db.execute(sql`select count from rate_limit_counters where key = ${this.#prefix + key} and window_start = ${windowStart}::bigint`),
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
      for (const [key, c] of this.#counters) if (c.windowStart < current && c.unsynced === 0) this.#counters.delete(key);
      if (now - this.#lastCleanup > this.#windowMs) {
        this.#lastCleanup = now;
        await this.#db.execute(sql`delete from rate_limit_counters where window_start < ${current - this.#windowMs}::bigint`);
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
}
