// Coalesced point reads. Requests for single rows by (merchant, id) that arrive during one turn
// of the event loop go to the database as one statement over all of their keys, instead of one
// round trip each: under load, PostgreSQL parses, plans and returns one result instead of
// dozens, and the driver and the kernel handle one exchange. Each caller still gets only its
// own row, looked up by both the merchant and the id, so scoping is the same as a single read;
// the statement starts after every request in it arrived, so a read still sees every write
// that was answered before it was asked.
import type { Executor } from './open.ts';
import { run, statement, type Statement } from './statements.ts';

type Pending<R> = {
  clientId: string;
  id: string;
  resolve: (row: R | undefined) => void;
  reject: (err: unknown) => void;
};

/**
 * A point read declared once per module: `sql` selects the rows for `$1::uuid[]` (client ids)
 * and `$2::uuid[]` (ids), pairwise, as `id` and `clientId` among other columns:
 * `... from unnest($1::uuid[], $2::uuid[]) k(client_id, id) join ...`. The ids must already be
 * valid UUIDs (path validation): one bad id would fail the batch.
 */
export class CoalescedRead<R extends { id: string; clientId: string }> {
  readonly #statement: Statement;
  readonly #max: number;
  /** One batch in the making per executor (the pool, or PGlite). */
  readonly #batches = new WeakMap<Executor, Batch<R>>();

  constructor(name: string, sql: string, max = 100) {
    this.#statement = statement(name, sql);
    this.#max = max;
  }

  get(db: Executor, clientId: string, id: string): Promise<R | undefined> {
    let batch = this.#batches.get(db);
    if (!batch) {
      batch = new Batch<R>(db, this.#statement, this.#max);
      this.#batches.set(db, batch);
    }
    return batch.add(clientId, id);
  }
}

class Batch<R extends { id: string; clientId: string }> {
  readonly #db: Executor;
  readonly #statement: Statement;
  readonly #turn: TurnBatch<Pending<R>>;

  constructor(db: Executor, st: Statement, max: number) {
    this.#db = db;
    this.#statement = st;
    this.#turn = new TurnBatch((batch) => this.#flush(batch), max);
  }

  add(clientId: string, id: string): Promise<R | undefined> {
    return new Promise((resolve, reject) =>
      this.#turn.add({ clientId: clientId.toLowerCase(), id: id.toLowerCase(), resolve, reject }),
    );
  }

  #flush(batch: Pending<R>[]): void {
    // Each key once: a query that aggregates per key would count a repeated key twice.
    const keys = [...new Set(batch.map((p) => `${p.clientId}/${p.id}`))];
    const clientIds = keys.map((k) => k.slice(0, 36));
    const ids = keys.map((k) => k.slice(37));
    run<R>(this.#db, this.#statement, [clientIds, ids]).then(
      (rows) => {
        const found = new Map(rows.map((r) => [`${r.clientId}/${r.id}`, r]));
        for (const p of batch) p.resolve(found.get(`${p.clientId}/${p.id}`));
      },
      (err: unknown) => {
        for (const p of batch) p.reject(err);
      },
    );
  }
}

/**
 * Items gathered during one turn of the event loop, or until they weigh `max` (each `weight`,
 * one by default), then handed to `flush` together: the batching of every coalesced read.
 */
export class TurnBatch<T> {
  readonly #flush: (items: T[]) => void;
  readonly #max: number;
  readonly #weight: (item: T) => number;
  #items: T[] = [];
  #weighed = 0;
  #scheduled = false;

  constructor(flush: (items: T[]) => void, max: number, weight: (item: T) => number = () => 1) {
    this.#flush = flush;
    this.#max = max;
    this.#weight = weight;
  }

  add(item: T): void {
    this.#items.push(item);
    this.#weighed += this.#weight(item);
    if (this.#weighed >= this.#max) this.#drain();
    else if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#drain());
    }
  }

  #drain(): void {
    this.#scheduled = false;
    const items = this.#items;
    if (items.length === 0) return;
    this.#items = [];
    this.#weighed = 0;
    this.#flush(items);
  }
}

type Lookup<R> = { keys: string[]; resolve: (rows: R[]) => void; reject: (err: unknown) => void };

/**
 * Lookups by a list of keys (`run` reads the rows of all the keys given, as one statement over an
 * array) made in one turn of the event loop, sent as one: each caller gets the rows whose key
 * (`keyOf`) is among its own, in the statement's order. The payments of a page's intents are
 * one such lookup per page; many pages at once are then one statement.
 */
export function coalescedLookups<R>(
  run: (db: Executor, keys: string[]) => Promise<R[]>,
  keyOf: (row: R) => string,
  max = 1_000,
) {
  const turns = new WeakMap<Executor, TurnBatch<Lookup<R>>>();
  const flush = (db: Executor, batch: Lookup<R>[]) => {
    const keys = [...new Set(batch.flatMap((l) => l.keys))];
    run(db, keys).then(
      (rows) => {
        if (batch.length === 1) return batch[0]!.resolve(rows);
        for (const l of batch) {
          const mine = new Set(l.keys);
          l.resolve(rows.filter((r) => mine.has(keyOf(r))));
        }
      },
      (err: unknown) => {
        for (const l of batch) l.reject(err);
      },
    );
  };
  return (db: Executor, keys: string[]): Promise<R[]> =>
    new Promise((resolve, reject) => {
      let turn = turns.get(db);
      if (!turn)
        turns.set(
          db,
          (turn = new TurnBatch(
            (batch) => flush(db, batch),
            max,
            (l) => l.keys.length,
          )),
        );
      turn.add({ keys, resolve, reject });
    });
}
