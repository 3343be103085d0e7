// The yardstick for money movements: a raw `pg` transfer transaction (BEGIN; two balance
// updates; two posting inserts; COMMIT = five statements and a commit), on its own tables,
// from 8 connections, fsync as the server is configured.
import pg from 'pg';
import { randomUUID } from 'node:crypto';

/**
 * Transfers a second over `durationS`, after `warmupS` of the same (default none) on the same
 * connections, not counted.
 */
export async function rawTransferRate(databaseUrl: string, opts: { connections?: number; durationS?: number; warmupS?: number } = {}): Promise<number> {
  const connections = opts.connections ?? 8;
  const pool = new pg.Pool({ connectionString: databaseUrl, max: connections });
  await pool.query(`create table if not exists bench_accounts (id int primary key, balance bigint not null)`);
  await pool.query(`create table if not exists bench_postings (id uuid primary key, account_id int not null, amount bigint not null, created_at timestamptz not null default now())`);
  await pool.query(`insert into bench_accounts select g, 1000000000 from generate_series(1, 1000) g on conflict do nothing`);
  const counted = Date.now() + (opts.warmupS ?? 0) * 1000;
  const deadline = counted + (opts.durationS ?? 10) * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      const c = await pool.connect();
      try {
        while (Date.now() < deadline) {
          const a = 1 + Math.floor(Math.random() * 1000);
          const b = 1 + ((a + Math.floor(Math.random() * 998)) % 1000);
          await c.query('begin');
          // The two rows in id order, as any transfer must lock them: in random order, two
          // transfers between the same pair deadlock (which once ended a benchmark run).
          for (const [id, delta] of a < b ? [[a, -1], [b, 1]] : [[b, 1], [a, -1]]) {
            await c.query({ name: 'move', text: 'update bench_accounts set balance = balance + $2 where id = $1', values: [id, delta] });
          }
          await c.query({ name: 'p1', text: 'insert into bench_postings (id, account_id, amount) values ($1, $2, $3)', values: [randomUUID(), a, -1] });
          await c.query({ name: 'p2', text: 'insert into bench_postings (id, account_id, amount) values ($1, $2, $3)', values: [randomUUID(), b, 1] });
          await c.query('commit');
          if (Date.now() >= counted) done++;
        }
      } finally {
        c.release();
      }
    }),
  );
  await pool.end();
  return Math.round(done / (opts.durationS ?? 10));
}

/**
 * The raw transfer measured beside each money row on PostgreSQL, as BareBeside (lib.ts) does
 * for reads: a run just before the row and one just after, the row's yardstick their mean
 * (LoadResult.raw). The raw transfer's rate moves with the host's minute as Coffer's does (its
 * 10-second runs at the start of a scenario went from 1,942 to 2,950 a second within an hour and
 * a half on the AMD EPYC host), so a ratio to one run at the start of a scenario measures the
 * host as much as the code. The run after a row waits for the server's own work for the row
 * to end first (the payments it made settle a second later, its deposits' bank pulls run every
 * quarter second), so that it does not share the cores with it; a row that follows another at
 * once shares the run between them.
 */
export class RawBeside {
  static readonly RUN_S = 3;
  static readonly QUIET_MS = 1_500;
  #last: { rps: number; at: number } | undefined;

  constructor(private readonly databaseUrl: string) {}

  async #measure(): Promise<number> {
    const rps = await rawTransferRate(this.databaseUrl, { durationS: RawBeside.RUN_S, warmupS: 0.5 });
    this.#last = { rps, at: performance.now() };
    return rps;
  }

  /** `row` between two runs of the raw transfer; `quiet`, if given, is also awaited before the run after it. */
  async around<R extends { rps: number }>(row: () => Promise<R>, quiet?: () => Promise<void>): Promise<R & { raw: number }> {
    const before = this.#last && performance.now() - this.#last.at < 2000 ? this.#last.rps : await this.#measure();
    const r = await row();
    await new Promise((resolve) => setTimeout(resolve, RawBeside.QUIET_MS));
    if (quiet) await quiet();
    const after = await this.#measure();
    return { ...r, raw: Math.round((before + after) / 2) };
  }
}
