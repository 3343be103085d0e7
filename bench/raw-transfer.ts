// The yardstick for money movements: a raw `pg` transfer transaction (BEGIN; two balance
// updates; two posting inserts; COMMIT = five statements and a commit), on its own tables,
// from 8 connections, fsync as the server is configured.
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import { Beside } from './lib.ts';

/**
 * Transfers a second over `durationS`, after `warmupS` of the same (default none) on the same
 * connections, not counted.
 */
export async function rawTransferRate(
  databaseUrl: string,
  opts: { connections?: number; durationS?: number; warmupS?: number } = {},
): Promise<number> {
  const connections = opts.connections ?? 8;
  const pool = new pg.Pool({ connectionString: databaseUrl, max: connections });
  await pool.query(`create table if not exists bench_accounts (id int primary key, balance bigint not null)`);
  await pool.query(
    `create table if not exists bench_postings (id uuid primary key, account_id int not null, amount bigint not null, created_at timestamptz not null default now())`,
  );
  await pool.query(
    `insert into bench_accounts select g, 1000000000 from generate_series(1, 1000) g on conflict do nothing`,
  );
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
          for (const [id, delta] of a < b
            ? [
                [a, -1],
                [b, 1],
              ]
            : [
                [b, 1],
                [a, -1],
              ]) {
            await c.query({
              name: 'move',
              text: 'update bench_accounts set balance = balance + $2 where id = $1',
              values: [id, delta],
            });
          }
          await c.query({
            name: 'p1',
            text: 'insert into bench_postings (id, account_id, amount) values ($1, $2, $3)',
            values: [randomUUID(), a, -1],
          });
          await c.query({
            name: 'p2',
            text: 'insert into bench_postings (id, account_id, amount) values ($1, $2, $3)',
            values: [randomUUID(), b, 1],
          });
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
 * The raw transfer beside each money row on PostgreSQL (Beside, lib.ts), as the bare route is
 * beside read rows: its yardstick is LoadResult.raw. The raw transfer's rate moves with the
 * host's minute as Coffer's does (its 10-second runs at the start of a scenario went from 1,942
 * to 2,950 a second within an hour and a half on the AMD EPYC host). The run after a row starts
 * QUIET_MS after it, then waits for `settle` (the payments a row made settle a second later, its
 * deposits' bank pulls run every quarter second).
 */
const RAW_BESIDE_RUN_S = 3;
const RAW_BESIDE_QUIET_MS = 1_500;

export function rawBeside(databaseUrl: string, settle?: () => Promise<void>): Beside {
  return new Beside(
    () => rawTransferRate(databaseUrl, { durationS: RAW_BESIDE_RUN_S, warmupS: 0.5 }),
    async () => {
      await new Promise((resolve) => setTimeout(resolve, RAW_BESIDE_QUIET_MS));
      await settle?.();
    },
  );
}
