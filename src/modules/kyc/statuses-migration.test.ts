// The migration that moves stored KYC statuses to Accrue's vocabulary (docs/identity.md#kyc-in-detail):
// a database migrated up to the one before it, holding the old statuses, is migrated the rest of
// the way; DisclosuresAccepted becomes NotStarted (its acceptance time kept) and Declined Denied.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf, runMigrations } from '../../db/open.ts';
import { migrationTestDatabase } from '../../test/migrations.ts';

const TAG = /_accrue_kyc_users$/;

const scratch = migrationTestDatabase('kyc');

test('stored DisclosuresAccepted and Declined become NotStarted and Denied; other statuses stay', async () => {
  await scratch.upTo(TAG);

  const client = randomUUID();
  const accepted = new Date('2026-05-01T10:00:00Z');
  const users = { disclosed: randomUUID(), declined: randomUUID(), approved: randomUUID(), fresh: randomUUID() };
  const db = scratch.database.db;
  await db.execute(sql`insert into clients (id, name) values (${client}, 'Old statuses')`);
  for (const [name, status] of [
    ['disclosed', 'DisclosuresAccepted'],
    ['declined', 'Declined'],
    ['approved', 'Approved'],
    ['fresh', 'NotStarted'],
  ] as const) {
    await db.execute(sql`insert into users (id, client_id, public_id, phone_number, kyc_status, disclosures_accepted_at)
      values (${users[name]}, ${client}, ${name}, ${`+1415555${String(Object.keys(users).indexOf(name)).padStart(4, '0')}`}, ${status}, ${status === 'NotStarted' ? null : accepted.toISOString()})`);
  }
  const application = randomUUID();
  await db.execute(sql`insert into kyc_applications (id, client_id, user_id, status, first_name, last_name, date_of_birth, email, address, decide_after)
    values (${application}, ${client}, ${users.declined}, 'Declined', 'D', 'E', '1990-01-01', 'd@declined.test', '{}'::jsonb, now())`);

  await runMigrations(scratch.database);

  const rows = rowsOf<{ id: string; kyc_status: string; disclosures_accepted_at: Date | string | null }>(
    await db.execute(sql`select id, kyc_status, disclosures_accepted_at from users where client_id = ${client}`),
  );
  const byId = Object.fromEntries(
    rows.map((r) => [
      r.id,
      [r.kyc_status, r.disclosures_accepted_at && new Date(r.disclosures_accepted_at).toISOString()],
    ]),
  );
  assert.deepEqual(byId, {
    [users.disclosed]: ['NotStarted', accepted.toISOString()],
    [users.declined]: ['Denied', accepted.toISOString()],
    [users.approved]: ['Approved', accepted.toISOString()],
    [users.fresh]: ['NotStarted', null],
  });
  const [app] = rowsOf<{ status: string }>(
    await db.execute(sql`select status from kyc_applications where id = ${application}`),
  );
  assert.equal(app!.status, 'Denied');
});
