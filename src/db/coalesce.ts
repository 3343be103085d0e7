// Coalesced point reads. Requests for single rows by (merchant, id) that arrive during one turn
// of the event loop go to the database as one statement over all of their keys, instead of one
// round trip each: under load, PostgreSQL parses, plans and returns one result instead of
// dozens, and the driver and the kernel handle one exchange. Each caller still gets only its
// own row, looked up by both the merchant and the id, so scoping is the same as a single read;
// the statement starts after every request in it arrived, so a read still sees every write
// that was answered before it was asked.
import type { Executor } from './open.ts';
import { run, statement, type Statement } from './statements.ts';

type Pending<R> = { clientId: string; id: string; resolve: (row: R | undefined) => void; reject: (err: unknown) => void };

export class CoalescedRead<R extends { id: string }> {
  readonly #db: Executor;
  readonly #statement: Statement;
  readonly #clientIdOf: (row: R) => string;
  readonly #max: number;
  #pending: Pending<R>[] = [];
  #scheduled = false;

  /**
   * `sql` selects the rows for `$1::uuid[]` (client ids) and `$2::uuid[]` (ids), pairwise,
   * with `clientId` among its columns, e.g. `... from unnest($1::uuid[], $2::uuid[]) k(client_id, id) join ...`.
   */
  constructor(db: Executor, name: string, sql: string, opts: { clientIdOf: (row: R) => string; max?: number }) {
    this.#db = db;
    this.#statement = statement(name, sql);
    this.#clientIdOf = opts.clientIdOf;
    this.#max = opts.max ?? 100;
  }

  get(clientId: string, id: string): Promise<R | undefined> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ clientId, id, resolve, reject });
      if (this.#pending.length >= this.#max) this.#flush();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const batch = this.#pending;
    if (batch.length === 0) return;
    this.#pending = [];
    run<R>(this.#db, this.#statement, [batch.map((p) => p.clientId), batch.map((p) => p.id)]).then(
      (rows) => {
        const found = new Map(rows.map((r) => [`${this.#clientIdOf(r)}/${r.id}`, r]));
        for (const p of batch) p.resolve(found.get(`${p.clientId}/${p.id}`));
      },
      (err: unknown) => {
        for (const p of batch) p.reject(err);
      },
    );
  }
}
