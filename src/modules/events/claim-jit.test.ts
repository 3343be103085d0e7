// The webhook workers' claim runs without JIT compilation (migration 0026). PostgreSQL plans the
// statement inside due_event_deliveries_per_client at every call, and once a backlog is large
// enough for its estimated cost to pass jit_above_cost, each claim would compile that statement
// before running it: about 30 ms a claim, against 1 ms without, with 500,000 pending
// deliveries (the migration's comment).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../db/open.ts';
import { createTestApp, type TestApp } from '../../test/harness.ts';

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(() => t.close());

test('the claim of due deliveries runs without JIT, and keeps its plan settings', async () => {
  const [fn] = rowsOf<{ config: string[] | null }>(
    await t.ctx.db.execute(
      sql`select proconfig as config from pg_proc where proname = 'due_event_deliveries_per_client'`,
    ),
  );
  assert.deepEqual([...(fn?.config ?? [])].sort(), ['enable_bitmapscan=off', 'jit=off']);
});
