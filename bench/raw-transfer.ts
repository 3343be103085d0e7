// The yardstick for money movements: a raw `pg` transfer transaction (BEGIN; two balance
// updates; two posting inserts; COMMIT = five statements and a commit), on its own tables,
// from 8 connections, fsync as the server is configured.
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import { Beside, RAW_TRANSFER } from './lib.ts';
import { fixedRate, type OpenLoopResult } from './open-loop.ts';

/** The raw transfer's connections: a transfer waits for one of them, as Coffer's requests wait for its pool's. */
const RAW_CONNECTIONS = 8;

/** The raw transfer's own tables, made once per database. */
async function rawTables(pool: pg.Pool): Promise<void> {
  await pool.query(`create table if not exists bench_accounts (id int primary key, balance bigint not null)`);
  await pool.query(
    `create table if not exists bench_postings (id uuid primary key, account_id int not null, amount bigint not null, created_at timestamptz not null default now())`,
  );
  await pool.query(
    `insert into bench_accounts select g, 1000000000 from generate_series(1, 1000) g on conflict do nothing`,
  );
}

/** One transfer between two random accounts of the 1,000. */
async function transfer(c: pg.PoolClient): Promise<void> {
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
}

/**
 * Transfers a second over `durationS`, after `warmupS` of the same (default none) on the same
 * connections, not counted.
 */
export async function rawTransferRate(
  databaseUrl: string,
  opts: { connections?: number; durationS?: number; warmupS?: number } = {},
): Promise<number> {
  const connections = opts.connections ?? RAW_CONNECTIONS;
  const pool = new pg.Pool({ connectionString: databaseUrl, max: connections });
  await rawTables(pool);
  const counted = Date.now() + (opts.warmupS ?? 0) * 1000;
  const deadline = counted + (opts.durationS ?? 10) * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      const c = await pool.connect();
      try {
        while (Date.now() < deadline) {
          await transfer(c);
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
 * The raw transfer offered at a fixed rate (open-loop.ts): each transfer due on the clock takes a
 * connection of the 8 when one is free (its wait in the pool's queue is part of its latency).
 */
export async function rawTransferOpenLoop(
  databaseUrl: string,
  opts: { rate: number; durationS: number; warmupS?: number },
): Promise<OpenLoopResult> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: RAW_CONNECTIONS });
  try {
    await rawTables(pool);
    return await fixedRate(RAW_TRANSFER, {
      ...opts,
      send: async () => {
        const c = await pool.connect();
        try {
          await transfer(c);
          return true;
        } catch (e) {
          await c.query('rollback').catch(() => {});
          throw e;
        } finally {
          c.release();
        }
      },
    });
  } finally {
    await pool.end();
  }
}

/** A yardstick run's seconds, and the pause before the run after a row (rawBeside). */
export const RAW_BESIDE_RUN_S = 3;
export const RAW_BESIDE_QUIET_MS = 1_500;

/** One run of the raw transfer as a row's yardstick: RAW_BESIDE_RUN_S (or `durationS`) after half a second not counted. */
export const rawYardstick = (databaseUrl: string, durationS = RAW_BESIDE_RUN_S) =>
  rawTransferRate(databaseUrl, { durationS, warmupS: 0.5 });

/**
 * The raw transfer beside each money row on PostgreSQL (Beside, lib.ts), as the bare route is
 * beside read rows: its yardstick is LoadResult.raw. The raw transfer's rate moves with the
 * host's minute as Coffer's does. The run after a row starts
 * QUIET_MS after it, then waits for `settle` (the payments a row made settle a second later, its
 * deposits' bank pulls run every quarter second).
 */
export function rawBeside(databaseUrl: string, settle?: () => Promise<void>): Beside {
  return new Beside(
    () => rawYardstick(databaseUrl),
    async () => {
      await new Promise((resolve) => setTimeout(resolve, RAW_BESIDE_QUIET_MS));
      await settle?.();
    },
  );
}
