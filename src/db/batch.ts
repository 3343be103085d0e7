// Several writes sent as one statement: `with w0 as (insert ...), w1 as (update ...) select 1`.
// A deposit's transaction row, ledger entry, postings, balances and stored idempotent response
// go in one round trip instead of three (round trips, not SQL, were what a deposit waited on).
// Each composition becomes a named prepared statement, so PostgreSQL plans it once.
//
// Parts must be single plain INSERT/UPDATE/DELETE statements (PostgreSQL allows
// data-modifying statements only at the top level of WITH) with their own $1..$n parameters.
// All parts see the same snapshot: a part must not read what another part writes, and two
// parts must not write the same row (PostgreSQL would apply only one of them). Parts name the
// rows they write, and adding a second write of a row is refused: flush first. Balance changes
// are the exception: their parts are additive, and a second one adds up with the first.
//
// A group commit (db/groups.ts) gives each request its own batch and sends them together:
// merged() turns the parts of one shape from every batch into one part reading its rows from a
// JSON document, so the statement, and its prepared plan, is the same whatever the group's size.
import { createHash } from 'node:crypto';
import type { Executor } from './open.ts';
import { run, runWithNext, shiftParams, statement, type Statement } from './statements.ts';

export interface WritePart {
  /** Names the part's SQL shape; equal names must mean equal text. */
  name: string;
  text: string;
  params: unknown[];
  /** The rows this part writes, as `table:id`. */
  rows?: string[];
  /**
   * How parts of this shape from many writers (a group commit) become one part: parts with the
   * same key are combined from their items, in order. Without it, the part is sent as it is.
   */
  merge?: Merge;
}

export interface Merge {
  key: string;
  item: unknown;
  combine(items: unknown[]): WritePart;
  /**
   * Changes that add up (balance deltas): a second part of this key in one batch is combined
   * with the first instead of refused, even when they write the same rows.
   */
  additive?: boolean;
}

const composed = new Map<string, Statement>();

export class WriteBatch {
  #parts: WritePart[] = [];
  #rows = new Set<string>();
  #flushed = false;

  add(part: WritePart): void {
    if (part.merge?.additive) {
      const i = this.#parts.findIndex((p) => p.merge?.key === part.merge!.key);
      if (i >= 0) {
        const merge = { ...part.merge, item: [this.#parts[i]!.merge!.item, part.merge.item].flat() };
        this.#parts[i] = { ...merge.combine([merge.item]), merge };
        return;
      }
      this.#parts.push(part);
      return;
    }
    for (const r of part.rows ?? []) {
      if (this.#rows.has(r)) throw new Error(`write batch already writes ${r}; flush it before writing the row again`);
    }
    for (const r of part.rows ?? []) this.#rows.add(r);
    this.#parts.push(part);
  }

  /** Adds a part, first flushing what is queued if the part writes a row already written. */
  async put(ex: Executor, part: WritePart): Promise<void> {
    if (!part.merge?.additive && (part.rows ?? []).some((r) => this.#rows.has(r))) await this.flush(ex);
    this.add(part);
  }

  /** Whether a part already writes this row (`table:id`). */
  writes(row: string): boolean {
    return this.#rows.has(row);
  }

  /**
   * One batch of the writes of many (a group commit): parts that can merge become one part per
   * shape, whatever the number of writers, so the statement and its prepared plan stay the same;
   * the others are kept as they are. Rows written by two writers are refused as by add().
   */
  static merged(batches: WriteBatch[]): WriteBatch {
    const out = new WriteBatch();
    const groups = new Map<string, { combine: Merge['combine']; items: unknown[] }>();
    const order: (WritePart | string)[] = [];
    for (const b of batches) {
      for (const p of b.#parts) {
        if (!p.merge) {
          order.push(p);
          continue;
        }
        const g = groups.get(p.merge.key);
        if (g) g.items.push(p.merge.item);
        else {
          groups.set(p.merge.key, { combine: p.merge.combine, items: [p.merge.item] });
          order.push(p.merge.key);
        }
      }
    }
    for (const o of order) {
      if (typeof o !== 'string') out.add(o);
      else {
        const g = groups.get(o)!;
        out.add(g.combine(g.items));
      }
    }
    return out;
  }

  /** Whether this batch has sent anything yet (its writes are then in the transaction). */
  get flushed(): boolean {
    return this.#flushed;
  }

  get size(): number {
    return this.#parts.length;
  }

  /** Sends every part as one statement, in the caller's transaction. */
  async flush(ex: Executor): Promise<void> {
    await this.#send(ex, run);
  }

  /**
   * The transaction's last write: sent with its COMMIT (or its next statement), in one exchange,
   * where the connection allows it (runWithNext); otherwise now, as flush does. Its failure is
   * then the COMMIT's, thrown by the transaction rather than here, so only a caller that would
   * not catch it here may use it.
   */
  async flushWithCommit(ex: Executor): Promise<void> {
    await this.#send(ex, runWithNext);
  }

  async #send(ex: Executor, send: (ex: Executor, st: Statement, params: unknown[]) => Promise<unknown>): Promise<void> {
    const parts = this.#parts;
    this.#parts = [];
    this.#rows.clear();
    if (parts.length === 0) return;
    this.#flushed = true;
    if (parts.length === 1) {
      await send(ex, statement(parts[0]!.name, parts[0]!.text), parts[0]!.params);
      return;
    }
    const key = parts.map((p) => p.name).join('+');
    let st = composed.get(key);
    if (!st) {
      let offset = 0;
      const ctes = parts.map((p, i) => {
        const shifted = shiftParams(p.text, offset);
        offset += p.params.length;
        return `w${i} as (${shifted})`;
      });
      // Statement names are at most 63 bytes: a hash of the composition names it.
      st = statement(
        `batch_${createHash('sha1').update(key).digest('hex').slice(0, 20)}`,
        `with ${ctes.join(',\n')} select 1`,
      );
      composed.set(key, st);
    }
    await send(
      ex,
      st,
      parts.flatMap((p) => p.params),
    );
  }
}
