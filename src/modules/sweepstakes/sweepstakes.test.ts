// Sweepstakes results (Accrue's addSweepstakesResults): recorded once per sweepstakes and user of
// the merchant, moving no money; unknown customers (another merchant's included) are refused.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { sweepstakesResults } from '../../db/schema.ts';
import { createTestApp, createUser, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import { assertLedgerSound, balanceOf, fundedWallet } from '../../test/money.ts';

describe('sweepstakes results', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  const add = (sweepstakesId: string, customer: unknown, as = m) =>
    t.request('POST', `/api/v1/sweepstakes/${sweepstakesId}/results`, {
      as,
      body: { data: { type: 'SweepstakesResults', attributes: { customer } } },
    });
  const recorded = (clientId: string, sweepstakesId: string) =>
    t.ctx.db
      .select()
      .from(sweepstakesResults)
      .where(and(eq(sweepstakesResults.clientId, clientId), eq(sweepstakesResults.sweepstakesId, sweepstakesId)));

  test('201 with no body; by phone number (the default) or by id; the same customer again is one result', async () => {
    const { user, wallet } = await fundedWallet(t, m, 1_000);
    const before = await balanceOf(t, m, wallet.id);
    const phoneNumber = user.attributes.profile.phoneNumber as string;
    const res = await add('summer-2026', { id: phoneNumber });
    assert.equal(res.status, 201, res.raw);
    assert.equal(res.raw, '');
    assert.equal(res.headers['content-type'], undefined, 'no body, so no media type');
    assert.equal((await add('summer-2026', { idType: 'PhoneNumber', id: phoneNumber })).status, 201);
    assert.equal((await add('summer-2026', { idType: 'ID', id: user.id })).status, 201);
    const rows = await recorded(m.clientId, 'summer-2026');
    assert.equal(rows.length, 1, 'one result per customer');
    assert.equal(rows[0]!.userId, user.id);
    assert.equal(rows[0]!.customerIdType, 'PhoneNumber');
    const second = await createUser(t, m);
    await t.request('PATCH', `/api/v1/users/${second.id}/attached-profile`, {
      as: m,
      body: { data: { type: 'AttachedProfile', attributes: { stableReferenceId: `s-${second.id}` } } },
    });
    assert.equal(
      (await add('summer-2026', { idType: 'ID', id: `s-${second.id}` })).status,
      201,
      'a reference id names the user too',
    );
    assert.equal((await add('winter-2026', { id: phoneNumber })).status, 201);
    assert.equal((await recorded(m.clientId, 'summer-2026')).length, 2);
    assert.equal((await recorded(m.clientId, 'winter-2026')).length, 1);
    assert.deepEqual(await balanceOf(t, m, wallet.id), before, 'results move no money');
    await assertLedgerSound(t);
  });

  test("a customer that is not the merchant's user is 400 UserNotFound, another merchant's alike, and nothing is recorded", async () => {
    const theirs = await fundedWallet(t, other, 0);
    const cases: unknown[] = [
      { id: theirs.user.attributes.profile.phoneNumber },
      { idType: 'ID', id: theirs.user.id },
      { id: '+14155550000' },
      { idType: 'ID', id: 'nobody' },
    ];
    for (const customer of cases) {
      const res = await add('spring', customer);
      assert.equal(res.status, 400, JSON.stringify(customer));
      const e = errorsOf(res)[0]!;
      assert.equal(e.code, 'UserNotFound');
      assert.equal(e.source?.pointer, '/data/attributes/customer/id');
    }
    assert.deepEqual(await recorded(m.clientId, 'spring'), []);
    assert.equal(
      (await add('spring', { id: theirs.user.attributes.profile.phoneNumber }, other)).status,
      201,
      'its own merchant records it',
    );
  });

  test('bad bodies and sweepstakes ids are 400; no auth is 401', async () => {
    const u = await createUser(t, m);
    const bodies: [unknown, string][] = [
      [{ data: { type: 'SweepstakesResults', attributes: {} } }, '/data/attributes/customer'],
      [
        { data: { type: 'SweepstakesResults', attributes: { customer: { idType: 'Email', id: 'a@b.c' } } } },
        '/data/attributes/customer/idType',
      ],
      [{ data: { type: 'SweepstakesResults', attributes: { customer: { id: '' } } } }, '/data/attributes/customer/id'],
      [
        { data: { type: 'SweepstakesResults', attributes: { customer: { id: u.id, prize: 100 } } } },
        '/data/attributes/customer/prize',
      ],
      [{ data: { type: 'SweepstakesResult', attributes: { customer: { id: u.id } } } }, '/data/type'],
    ];
    for (const [body, pointer] of bodies) {
      const res = await t.request('POST', '/api/v1/sweepstakes/s1/results', { as: m, body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(errorsOf(res)[0]!.source?.pointer, pointer);
    }
    const badId = await t.request('POST', `/api/v1/sweepstakes/${encodeURIComponent('no spaces')}/results`, {
      as: m,
      body: bodies[0]![0],
    });
    assert.equal(badId.status, 400);
    assert.equal(errorsOf(badId)[0]!.source?.parameter, 'sweepstakesId');
    assert.equal((await t.request('POST', '/api/v1/sweepstakes/s1/results', { body: bodies[0]![0] })).status, 401);
    assert.deepEqual(await recorded(m.clientId, 's1'), []);
  });
});
