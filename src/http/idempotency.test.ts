// The idempotency check's lock-then-read on real PostgreSQL sessions: a request whose statement
// started before another request with the same key committed must still see that outcome once
// it holds the key's lock (found by the two-process test: two deposits for one key).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { rowsOf } from '../db/open.ts';
import { purgeExpiredKeys, RETENTION_MS } from './idempotency.ts';
import { createTestApp, dbKind, testDatabase } from '../test/harness.ts';

describe('idempotency check against a commit racing it', {
  skip: dbKind !== 'postgres' && 'needs two PostgreSQL sessions (PGlite is one)',
}, () => {
  test('the stored outcome is read after the lock, with a fresh snapshot', async () => {
    const app = await createTestApp();
    const { url } = await testDatabase();
    const first = new pg.Client({ connectionString: url });
    const second = new pg.Client({ connectionString: url });
    await first.connect();
    await second.connect();
    try {
      const m = await app.createMerchant();
      const key = randomUUID();
      const lockKey = `${m.clientId}:deposit:${key}`;
      // The first request holds the key and is about to commit its outcome.
      await first.query('begin');
      assert.equal(
        (
          await first.query('select locked from idempotency_check($1, $2, $3, $4)', [
            lockKey,
            m.clientId,
            'deposit',
            key,
          ])
        ).rows[0].locked,
        true,
      );
      await first.query(
        `insert into idempotency_keys (client_id, operation, key, fingerprint, status_code, response_body, expires_at)
         values ($1, 'deposit', $2, 'fp', 201, '{"data":{}}', now() + interval '1 day')`,
        [m.clientId, key],
      );
      // The second request's statement starts (and takes its snapshot) now, but reaches the
      // check only after a pause, by which time the first has committed and let go of the lock.
      const racing = second.query(
        `select c.* from (select 'x' from pg_sleep(0.5)) s(z)
         cross join lateral idempotency_check(left(s.z, 0) || $1, $2, $3, $4) c`,
        [lockKey, m.clientId, 'deposit', key],
      );
      await new Promise((r) => setTimeout(r, 150));
      await first.query('commit');
      const [row] = (await racing).rows;
      assert.equal(row.locked, true, 'the lock was free by then');
      assert.equal(row.fingerprint, 'fp', 'the committed outcome is seen: a replay, not a second run');
      assert.equal(row.status_code, 201);
    } finally {
      await first.end();
      await second.end();
      await app.close();
    }
  });
});

// Keys past their retention are deleted a batch at a time (the job runs again at once while it
// finds full batches); live keys stay and still replay.
describe('purging expired keys', () => {
  test('expired keys go in batches, live ones stay', async () => {
    const app = await createTestApp();
    try {
      const m = await app.createMerchant();
      const now = app.clock.now();
      const insert = (key: string, expiresAt: Date) =>
        app.ctx.db.execute(sql`insert into idempotency_keys (client_id, operation, key, fingerprint, status_code, response_body, created_at, expires_at)
          values (${m.clientId}, 'deposit', ${key}, 'fp', 201, '{}', ${new Date(expiresAt.getTime() - RETENTION_MS)}, ${expiresAt})`);
      for (let i = 0; i < 5; i++) await insert(`old-${i}`, new Date(now.getTime() - (i + 1) * 60_000));
      await insert('live', new Date(now.getTime() + 60_000));
      assert.equal(await purgeExpiredKeys(app.ctx.db, now, 2), 2);
      assert.equal(await purgeExpiredKeys(app.ctx.db, now, 2), 2);
      assert.equal(await purgeExpiredKeys(app.ctx.db, now, 2), 1);
      assert.equal(await purgeExpiredKeys(app.ctx.db, now, 2), 0);
      const left = rowsOf<{ key: string }>(
        await app.ctx.db.execute(sql`select key from idempotency_keys where client_id = ${m.clientId}`),
      );
      assert.deepEqual(
        left.map((r) => r.key),
        ['live'],
      );
    } finally {
      await app.close();
    }
  });
});
