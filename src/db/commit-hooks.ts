// Work to do once a transaction has committed (counting what it wrote in the metrics), and
// never when it rolls back: a movement counted as it is posted would be counted again when a
// failed group runs its requests alone (db/groups.ts), or counted though rolled back.
// openDatabase tracks the database's transactions; a savepoint's hooks pass to its parent when
// it is released, and go with it when it is rolled back.

type Hook = () => void;
const hooks = new WeakMap<object, Hook[]>();

interface Transactional {
  transaction(fn: (tx: object) => Promise<unknown>, config?: unknown): Promise<unknown>;
}

/** Runs `fn` after `executor`'s transaction commits; at once when `executor` is not a transaction (its statements commit as they run). */
export function afterCommit(executor: object, fn: Hook): void {
  const list = hooks.get(executor);
  if (list) list.push(fn);
  else fn();
}

/** Makes `holder.transaction` (a database, or a transaction for its savepoints) keep hooks for afterCommit. */
export function trackCommits(holder: object, parent?: Hook[]): void {
  const h = holder as Transactional;
  const transaction = h.transaction.bind(h);
  h.transaction = (fn, config) => {
    const list: Hook[] = [];
    return transaction((tx) => {
      hooks.set(tx, list);
      trackCommits(tx, list);
      return fn(tx);
    }, config).then((out) => {
      if (parent) parent.push(...list);
      else for (const f of list) f();
      return out;
    });
  };
}
