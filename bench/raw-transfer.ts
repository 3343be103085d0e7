// The yardstick for money movements: a raw `pg` transfer transaction (BEGIN; two balance
// updates; two posting inserts; COMMIT = five statements and a commit), on its own tables,
// from 8 connections, fsync as the server is configured.
import pg from 'pg';
import { randomUUID } from 'node:crypto';

export async function rawTransferRate(databaseUrl: string, opts: { connections?: number; durationS?: number } = {}): Promise<number> {
  const connections = opts.connections ?? 8;
  const pool = new pg.Pool({ connectionString: databaseUrl, max: connections });
  await pool.query(`create table if not exists bench_accounts (id int primary key, balance bigint not null)`);
  await pool.query(`create table if not exists bench_postings (id uuid primary key, account_id int not null, amount bigint not null, created_at timestamptz not null default now())`);
  await pool.query(`insert into bench_accounts select g, 1000000000 from generate_series(1, 1000) g on conflict do nothing`);
  const deadline = Date.now() + (opts.durationS ?? 10) * 1000;
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
          done++;
        }
      } finally {
        c.release();
      }
    }),
  );
  await pool.end();
  return Math.round(done / (opts.durationS ?? 10));
}
