// Row locks held by another session while a test sends its requests (PostgreSQL only: PGlite
// runs one statement at a time).
import type { SQL } from 'drizzle-orm';
import type { Db } from '../db/open.ts';

/**
 * Runs `body` while another transaction, on `t`'s database (a test app's, or another pool's),
 * holds the rows `lock` locks (a SELECT … FOR UPDATE or FOR NO KEY UPDATE), and releases them
 * when `body` ends, whether it succeeds or fails.
 */
export async function whileLocked(t: { ctx: { db: Db } }, lock: SQL, body: () => Promise<void>): Promise<void> {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const lockTaken = new Promise<void>((r) => (locked = r));
  const holder = t.ctx.db.transaction(async (tx) => {
    await tx.execute(lock);
    locked();
    await gate;
  });
  try {
    await Promise.race([lockTaken, holder]);
    await body();
  } finally {
    release();
    await holder;
  }
}

/** Settles with the promise's value, or with 'pending' if it has not settled within `ms`. */
export const within = <T>(p: Promise<T>, ms: number): Promise<T | 'pending'> =>
  Promise.race([p, new Promise<'pending'>((r) => setTimeout(() => r('pending'), ms))]);
