// Group commit: requests of one kind that arrive during one turn of the event loop are handed
// together to a function that serves them in one database transaction (deposits, authorizes,
// captures).
// Under load a request's share of round trips, statements and commits falls with the size of
// the group; on two cores shared with PostgreSQL those, not the rows, were most of a request's
// cost (docs/benchmarks.md). A quiet server runs each request at once, as a group of one.
import type { Db } from './open.ts';

export type Member<T, R> = T & { resolve(result: R): void; reject(err: unknown): void };

/** Beyond this many, a new group starts (a statement's arrays stay small). */
const MAX_GROUP = 100;
/**
 * Groups running at once per database: one in the database while the next is checked. More
 * only split the same requests into smaller groups that wait on each other's rows (measured on
 * deposits with 1, 2, 4 and 100: 2 was best, by less than the run-to-run noise).
 */
const MAX_RUNNING = 2;

interface Queue<M> {
  filling: M[];
  running: number;
  scheduled: boolean;
}

/**
 * A submit function for requests served by `serve`, which must settle every member it is given
 * (if it throws instead, every member is rejected with its error, so none is left waiting).
 */
export function groupCommit<T, R>(serve: (db: Db, members: Member<T, R>[]) => Promise<void>): (db: Db, request: T) => Promise<R> {
  const queues = new WeakMap<Db, Queue<Member<T, R>>>();
  const start = (db: Db, q: Queue<Member<T, R>>): void => {
    while (q.running < MAX_RUNNING && q.filling.length > 0) {
      const members = q.filling.splice(0, MAX_GROUP);
      q.running++;
      serve(db, members)
        // Settling twice is harmless: this only guards against a bug leaving one hanging.
        .catch((err: unknown) => {
          for (const m of members) m.reject(err);
        })
        .finally(() => {
          q.running--;
          start(db, q);
        });
    }
  };
  return (db, request) => {
    let q = queues.get(db);
    if (!q) queues.set(db, (q = { filling: [], running: 0, scheduled: false }));
    const queue = q;
    return new Promise<R>((resolve, reject) => {
      queue.filling.push({ ...request, resolve, reject });
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
