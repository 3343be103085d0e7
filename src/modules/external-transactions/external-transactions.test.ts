// External transactions through HTTP: a batch recorded all or nothing, Voids and Refunds tied
// to a Purchase, the link to the user source.customerId names, (type, source id) recorded
// once, the list's filters, another merchant's ids, and no money moving.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../db/open.ts';
import { createTestApp, createUser, errorsOf, phone, type Merchant, type TestApp } from '../../test/harness.ts';
import { assertLedgerSound } from '../../test/money.ts';

const item = (attributes: Record<string, unknown>) => ({
  type: 'ExternalTransaction',
  attributes: {
    source: { id: randomUUID(), createdAt: '2026-05-30T10:00:00.000Z' },
    payments: [{ method: 'Cash', amount: 1000 }],
    ...attributes,
  },
});

describe('external transactions', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  const add = (as: Merchant, data: unknown) =>
    t.request('POST', '/api/v1/external-transactions', { as, body: { data } });
  const ledgerEntries = async (as: Merchant) =>
    rowsOf<{ n: number }>(
      await t.ctx.db.execute(sql`select count(*)::int as n from ledger_entries where client_id = ${as.clientId}`),
    )[0]!.n;

  test('200 with a reference per item, in order; a Refund names its Purchase; source.customerId links the user; no money moves', async () => {
    const lm = await t.createMerchant();
    const user = await createUser(t, lm);
    await t.request('PATCH', `/api/v1/users/${user.id}/attached-profile`, {
      as: lm,
      body: { data: { type: 'AttachedProfile', attributes: { referenceId: 'cust_607329' } } },
    });
    const entries = await ledgerEntries(lm);
    const purchaseSource = randomUUID();
    const res = await add(lm, [
      item({
        source: { id: purchaseSource, createdAt: '2026-05-30T10:00:00.000Z', customerId: 'cust_607329' },
        channel: 'nyc-store-1',
        payments: [
          { method: 'Cash', amount: 10_000 },
          { method: 'DebitCard', amount: 5000 },
        ],
        payload: { till: 4, items: ['tea'] },
      }),
      item({
        source: { id: randomUUID(), createdAt: '2026-05-30T11:00:00.000Z', customerId: 'nobody-we-know' },
        payments: [{ amount: 250 }],
      }),
    ]);
    assert.equal(res.status, 200, res.raw);
    const [p, q] = res.body.data;
    assert.equal(p.type, 'ExternalTransaction');
    assert.deepEqual(
      { ...p.attributes, createdAt: undefined, updatedAt: undefined },
      { id: p.id, sourceId: purchaseSource, createdAt: undefined, updatedAt: undefined },
    );
    assert.deepEqual(p.relationships, {
      linkedExternalTransaction: { data: [] },
      user: { data: [{ id: user.id, type: 'User' }] },
    });
    assert.deepEqual(q.relationships.user, { data: [] }, 'an unknown customer links nobody');

    const got = await t.request('GET', `/api/v1/external-transactions/${p.id}`, { as: lm });
    assert.equal(got.status, 200);
    assert.deepEqual(
      { ...got.body.data.attributes, createdAt: undefined, updatedAt: undefined },
      {
        type: 'Purchase',
        linkedExternalTransactionId: null,
        source: { id: purchaseSource, createdAt: '2026-05-30T10:00:00.000Z', customerId: 'cust_607329' },
        channel: 'nyc-store-1',
        payments: [
          { amount: 10_000, method: 'Cash' },
          { amount: 5000, method: 'DebitCard' },
        ],
        payload: { till: 4, items: ['tea'] },
        createdAt: undefined,
        updatedAt: undefined,
      },
    );
    assert.equal(
      (await t.request('GET', `/api/v1/external-transactions/${q.id}`, { as: lm })).body.data.attributes.payments[0]
        .method,
      'Unknown',
    );

    const refund = await add(lm, [
      item({
        type: 'Refund',
        linkedExternalTransactionId: p.id,
        source: { id: 'r-1', createdAt: '2026-05-31T09:00:00.000Z', customerId: user.id },
      }),
    ]);
    assert.equal(refund.status, 200, refund.raw);
    assert.deepEqual(refund.body.data[0].relationships, {
      linkedExternalTransaction: { data: [{ id: p.id, type: 'ExternalTransaction' }] },
      user: { data: [{ id: user.id, type: 'User' }] },
    });
    const r = await t.request('GET', `/api/v1/external-transactions/${refund.body.data[0].id}`, { as: lm });
    assert.deepEqual(
      [r.body.data.attributes.type, r.body.data.attributes.linkedExternalTransactionId],
      ['Refund', p.id],
    );
    assert.equal(await ledgerEntries(lm), entries, 'recording moves no money');
    await assertLedgerSound(t);
  });

  test('a (type, source id) is recorded once: sending it again returns the first record', async () => {
    const lm = await t.createMerchant();
    const first = await add(lm, [item({ source: { id: 'till-1', createdAt: '2026-05-30T10:00:00.000Z' } })]);
    const again = await add(lm, [
      item({
        source: { id: 'till-1', createdAt: '2026-05-30T10:00:00.000Z' },
        payments: [{ method: 'Cash', amount: 1 }],
      }),
      item({ source: { id: 'till-2', createdAt: '2026-05-30T10:00:00.000Z' } }),
      item({ source: { id: 'till-2', createdAt: '2026-05-30T10:00:00.000Z' } }),
    ]);
    assert.equal(again.status, 200, again.raw);
    assert.equal(again.body.data[0].id, first.body.data[0].id);
    assert.equal(again.body.data[1].id, again.body.data[2].id);
    const list = await t.request('GET', '/api/v1/external-transactions', { as: lm });
    assert.equal(list.body.meta.total, 2);
    assert.equal(
      (await t.request('GET', `/api/v1/external-transactions/${first.body.data[0].id}`, { as: lm })).body.data
        .attributes.payments[0].amount,
      1000,
      'the first record is kept',
    );
    // Another type with the same source id is another transaction; another merchant's is theirs.
    const voided = await add(lm, [
      item({
        type: 'Void',
        linkedExternalTransactionId: first.body.data[0].id,
        source: { id: 'till-1', createdAt: '2026-05-30T10:05:00.000Z' },
      }),
    ]);
    assert.notEqual(voided.body.data[0].id, first.body.data[0].id);
    assert.notEqual(
      (await add(other, [item({ source: { id: 'till-1', createdAt: '2026-05-30T10:00:00.000Z' } })])).body.data[0].id,
      first.body.data[0].id,
    );
  });

  test('all or nothing: every problem of the batch in one 400, nothing recorded', async () => {
    const lm = await t.createMerchant();
    const purchase = (await add(lm, [item({})])).body.data[0].id;
    const refund = (await add(lm, [item({ type: 'Refund', linkedExternalTransactionId: purchase })])).body.data[0].id;
    const theirs = (await add(other, [item({})])).body.data[0].id;
    const res = await add(lm, [
      item({}),
      item({ type: 'Refund' }),
      item({ type: 'Purchase', linkedExternalTransactionId: purchase }),
    ]);
    assert.equal(res.status, 400);
    assert.deepEqual(
      errorsOf(res).map((e) => [e.code, e.source?.pointer]),
      [
        ['ValidationError', '/data/1/attributes/linkedExternalTransactionId'],
        ['ValidationError', '/data/2/attributes/linkedExternalTransactionId'],
      ],
    );
    const linked = await add(lm, [
      item({ type: 'Void', linkedExternalTransactionId: theirs }),
      item({ type: 'Refund', linkedExternalTransactionId: refund }),
      item({ type: 'Void', linkedExternalTransactionId: randomUUID() }),
    ]);
    assert.equal(linked.status, 400);
    assert.deepEqual(
      errorsOf(linked).map((e) => e.source?.pointer),
      [0, 1, 2].map((i) => `/data/${i}/attributes/linkedExternalTransactionId`),
      "another merchant's, a Refund, none: not a Purchase of yours",
    );
    assert.equal((await t.request('GET', '/api/v1/external-transactions', { as: lm })).body.meta.total, 2);
  });

  test('bad bodies are 400 with pointers', async () => {
    for (const [data, pointer] of [
      [[], '/data'],
      [item({}), '/data'],
      [Array.from({ length: 101 }, () => item({})), '/data'],
      [[item({ payments: [] })], '/data/0/attributes/payments'],
      [[item({ payments: [{ method: 'Bitcoin', amount: 5 }] })], '/data/0/attributes/payments/0/method'],
      [[item({ payments: [{ method: 'Cash', amount: -1 }] })], '/data/0/attributes/payments/0/amount'],
      [[item({ payments: [{ method: 'Cash' }] })], '/data/0/attributes/payments/0/amount'],
      [[item({ source: { id: 'x' } })], '/data/0/attributes/source/createdAt'],
      [[item({ source: { id: '', createdAt: '2026-05-30T10:00:00.000Z' } })], '/data/0/attributes/source/id'],
      [[item({ type: 'Chargeback' })], '/data/0/attributes/type'],
      [[item({ payload: 'x' })], '/data/0/attributes/payload'],
      [[item({ amount: 5 })], '/data/0/attributes/amount'],
      [[{ ...item({}), type: 'Purchase' }], '/data/0/type'],
    ] as const) {
      const res = await add(m, data);
      assert.equal(res.status, 400, JSON.stringify(data).slice(0, 200));
      assert.equal(errorsOf(res)[0]!.source?.pointer, pointer, JSON.stringify(data).slice(0, 200));
    }
  });

  test("the list: newest first, filtered by user, the user's phone number or source id; another merchant's are neither listed nor readable (404)", async () => {
    const lm = await t.createMerchant();
    const number = phone();
    const user = await createUser(t, lm, { phoneNumber: number });
    const a = (
      await add(lm, [item({ source: { id: 'src-a', createdAt: '2026-05-30T10:00:00.000Z', customerId: user.id } })])
    ).body.data[0].id;
    t.clock.advance(1000);
    const b = (await add(lm, [item({ source: { id: 'src-b', createdAt: '2026-05-30T10:00:00.000Z' } })])).body.data[0]
      .id;
    const ids = async (query: string) => {
      const res = await t.request('GET', `/api/v1/external-transactions${query}`, { as: lm });
      assert.equal(res.status, 200, res.raw);
      return res.body.data.map((x: { id: string }) => x.id);
    };
    assert.deepEqual(await ids(''), [b, a]);
    assert.deepEqual(await ids(`?filter[userId]=${user.id}`), [a]);
    assert.deepEqual(await ids(`?filter[phoneNumber]=${encodeURIComponent(number)}`), [a]);
    assert.deepEqual(await ids('?filter[phoneNumber]=%2B10000000000'), []);
    assert.deepEqual(await ids('?filter[sourceId]=src-b'), [b]);
    const list = await t.request('GET', '/api/v1/external-transactions?page[limit]=1', { as: lm });
    assert.deepEqual(list.body.meta, { total: 2, limit: 1, offset: 0 });
    assert.deepEqual(list.body.data[0].relationships, { linkedExternalTransaction: { data: [] }, user: { data: [] } });
    assert.equal(
      (await t.request('GET', `/api/v1/external-transactions?filter[userId]=${user.id}`, { as: other })).body.meta
        .total,
      0,
    );
    const theirs = await t.request('GET', `/api/v1/external-transactions/${a}`, { as: other });
    assert.equal(theirs.status, 404);
    assert.equal(errorsOf(theirs)[0]!.code, 'ExternalTransactionNotFound');
    for (const query of ['?filter[userId]=someone', '?filter[phoneNumber]=', '?filter[status]=x']) {
      assert.equal((await t.request('GET', `/api/v1/external-transactions${query}`, { as: lm })).status, 400, query);
    }
    assert.equal((await t.request('GET', '/api/v1/external-transactions/not-a-uuid', { as: lm })).status, 400);
  });
});
