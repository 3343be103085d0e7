// Group commit: requests of one kind that arrive during one turn of the event loop are handed
// together to a function that serves them in one database transaction (deposits, authorizes,
// captures).
// Under load a request's share of round trips, statements and commits falls with the size of
// the group; on two cores shared with PostgreSQL those, not the rows, are most of a request's
// cost (docs/architecture.md). A quiet server runs each request at once, as a group of one.
import { WriteBatch } from './batch.ts';
import { CommitOutcomeUnknown } from './errors.ts';
import type { Db, Tx } from './open.ts';
import { groupCommitSize } from '../observability/metrics.ts';

export type Member<T, R> = T & { resolve(result: R): void; reject(err: unknown): void };

/** Beyond this many, a new group starts (a statement's arrays stay small). */
const MAX_GROUP = 100;
/**
 * Groups running at once per database: one in the database while the next is checked. More
 * only split the same requests into smaller groups that wait on each other's rows (measured on
 * deposits with 1, 2, 4 and 100: 2 was best, by less than the run-to-run noise).
 */
const MAX_RUNNING = 2;

interface Waiting<M> {
  member: M;
  /** rowOf(request), taken once when it arrives: the count it adds to `held` is the one it takes off. */
  row: string | undefined;
}

interface Queue<M> {
  filling: Waiting<M>[];
  running: number;
  scheduled: boolean;
  /** The rows (`rowOf`) that running groups lock, with how many of their members lock each. */
  held: Map<string, number>;
}

export interface GroupOptions<T> {
  /** The kind of write (deposit, authorize, capture): the `kind` label of coffer_group_commit_size. */
  name: string;
  /**
   * A row the request will lock that another group's request may lock too (an authorize's
   * wallet), when known before the group runs. A request whose row a running group holds waits
   * for the next group instead of joining one that would wait on that lock as a whole: without
   * this, one authorize of a wallet that the running group was charging held up every other
   * member of its group until that group committed. Requests of one row keep their order.
   * Undefined: no such row, or not known.
   */
  rowOf?(request: T): string | undefined;
}

/**
 * A submit function for requests served by `serve`, which must settle every member it is given
 * (if it throws instead, every member is rejected with its error, so none is left waiting).
 */
export function groupCommit<T, R>(
  serve: (db: Db, members: Member<T, R>[]) => Promise<void>,
  opts: GroupOptions<T>,
): (db: Db, request: T) => Promise<R> {
  type W = Waiting<Member<T, R>>;
  const sizes = groupCommitSize.labels(opts.name);
  const queues = new WeakMap<Db, Queue<Member<T, R>>>();
  /** The next group: in order, skipping requests whose row a running group or a skipped request holds. */
  const take = (q: Queue<Member<T, R>>): W[] => {
    if (!opts.rowOf) return q.filling.splice(0, MAX_GROUP);
    const taken: W[] = [];
    const left: W[] = [];
    const skipped = new Set<string>();
    for (const w of q.filling) {
      if (taken.length < MAX_GROUP && (w.row === undefined || !(q.held.has(w.row) || skipped.has(w.row))))
        taken.push(w);
      else {
        left.push(w);
        if (w.row !== undefined) skipped.add(w.row);
      }
    }
    q.filling = left;
    return taken;
  };
  const hold = (q: Queue<Member<T, R>>, group: W[], by: 1 | -1): void => {
    for (const { row } of group) {
      if (row === undefined) continue;
      const n = (q.held.get(row) ?? 0) + by;
      if (n > 0) q.held.set(row, n);
      else q.held.delete(row);
    }
  };
  const start = (db: Db, q: Queue<Member<T, R>>): void => {
    while (q.running < MAX_RUNNING && q.filling.length > 0) {
      const group = take(q);
      // Every waiting request's row is held by a running group, which starts the next one as it ends.
      if (group.length === 0) return;
      const members = group.map((w) => w.member);
      q.running++;
      hold(q, group, 1);
      sizes.observe(members.length);
      serve(db, members)
        // Settling twice is harmless: this only guards against a bug leaving one hanging.
        .catch((err: unknown) => {
          for (const m of members) m.reject(err);
        })
        .finally(() => {
          hold(q, group, -1);
          q.running--;
          start(db, q);
        });
    }
  };
  return (db, request) => {
    let q = queues.get(db);
    if (!q) queues.set(db, (q = { filling: [], running: 0, scheduled: false, held: new Map() }));
    const queue = q;
    const row = opts.rowOf?.(request);
    return new Promise<R>((resolve, reject) => {
      // Object.assign, not a spread: this line sees the requests of every kind of group, and such
      // a spread made V8 build a map for every member (`--log-maps`).
      queue.filling.push({ member: Object.assign({ resolve, reject }, request), row });
      if (!queue.scheduled) {
        queue.scheduled = true;
        setImmediate(() => {
          queue.scheduled = false;
          start(db, queue);
        });
      }
    });
  };
}

/**
 * One group's transaction, for requests that each change one row (a payment, an intent) they
 * lock: the first request of each row joins the group, sorted by row (payment id order, the
 * order two groups lock their rows in, so they cannot deadlock); a repeat of a row runs after
 * the group commits, as it would have waited for the first's lock. `transact` decides each
 * member in the transaction and returns how to settle each after the commit.
 *
 * A group that fails as a whole wrote nothing: each member runs again as a group of one and gets
 * its own answer (alone, the error is its own). A group that may have committed
 * (CommitOutcomeUnknown) is not run again, since its changes may stand: every member gets the
 * retryable error.
 */
export async function runRowGroup<M extends { reject(err: unknown): void }>(
  db: Db,
  members: M[],
  rowOf: (m: M) => string,
  transact: (tx: Tx, group: M[]) => Promise<(() => void)[]>,
): Promise<void> {
  const seen = new Set<string>();
  const group: M[] = [];
  const later: M[] = [];
  for (const m of members) {
    const row = rowOf(m);
    if (seen.has(row)) later.push(m);
    else {
      seen.add(row);
      group.push(m);
    }
  }
  group.sort((a, b) => (rowOf(a) < rowOf(b) ? -1 : 1));
  const alone = (ms: M[]) => Promise.all(ms.map((m) => runRowGroup(db, [m], rowOf, transact)));
  let settle: (() => void)[];
  try {
    settle = await db.transaction((tx) => transact(tx, group));
  } catch (err) {
    if (err instanceof CommitOutcomeUnknown) {
      for (const m of [...group, ...later]) m.reject(err);
      return;
    }
    if (group.length === 1) group[0]!.reject(err);
    else await alone(group);
    await alone(later);
    return;
  }
  for (const s of settle) s();
  await alone(later);
}

/**
 * Decides each member of a group on a batch of its own, in order. A refusal (`refused(err)`: the
 * request's own error) before any of its writes went out leaves its writes out and settles it
 * with the error after the commit; a refusal after some went out, or any other error, fails the
 * group. Returns the decided members' batches, to be written together (WriteBatch.merged).
 */
export async function decideEach<M extends { resolve(result: R): void; reject(err: unknown): void }, R>(
  members: M[],
  settle: (() => void)[],
  refused: (err: unknown) => boolean,
  decide: (m: M, batch: WriteBatch) => Promise<R>,
): Promise<WriteBatch[]> {
  const batches: WriteBatch[] = [];
  for (const m of members) {
    const batch = new WriteBatch();
    try {
      const result = await decide(m, batch);
      batches.push(batch);
      settle.push(() => m.resolve(result));
    } catch (err) {
      if (!refused(err) || batch.flushed) throw err;
      settle.push(() => m.reject(err));
    }
  }
  return batches;
}
