// Counterparty transfers through HTTP: money between two of a merchant's counterparties in one
// ledger entry, Accrue's errors, idempotency keys, the list's filters, another merchant's ids,
// and transfers in opposite directions at once.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../db/open.ts';
import { createTestApp, dbKind, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import { counterpartyBalance, fundedCounterparty } from '../../test/counterparties.ts';
import { assertLedgerSound } from '../../test/money.ts';

const transferBody = (attributes: Record<string, unknown>) => ({
  data: { type: 'CounterpartyTransfer', attributes: { idempotencyKey: randomUUID(), ...attributes } },
});

describe('counterparty transfers', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  const transfer = (as: Merchant, attributes: Record<string, unknown>) =>
    t.request('POST', '/api/v1/counterparty-transfers', { as, body: transferBody(attributes) });

  test('201 Completed: the money moves at once from one available balance to the other, in one ledger entry; GET reads it back', async () => {
    const from = await fundedCounterparty(t, m, 5000, 'From');
    const to = await fundedCounterparty(t, m, 100, 'To');
    const key = randomUUID();
    const res = await transfer(m, {
      fromCounterpartyId: from,
      toCounterpartyId: to,
      amount: 1500,
      idempotencyKey: key,
      metadata: { orderId: 'order_123' },
    });
    assert.equal(res.status, 201, res.raw);
    const tr = res.body.data;
    assert.equal(tr.type, 'CounterpartyTransfer');
    const { createdAt, updatedAt, externalLedgerTransactionId, ...rest } = tr.attributes;
    assert.deepEqual(rest, {
      fromCounterpartyId: from,
      toCounterpartyId: to,
      amount: 1500,
      status: 'Completed',
      idempotencyKey: key,
      failureReason: null,
      metadata: { orderId: 'order_123' },
    });
    assert.equal(createdAt, updatedAt);
    assert.deepEqual(await counterpartyBalance(t, m, from), { pending: 0, available: 3500 });
    assert.deepEqual(await counterpartyBalance(t, m, to), { pending: 0, available: 1600 });
    // The ledger entry it names is the one that moved the money.
    const entry = rowsOf(
      await t.ctx.db.execute(sql`select kind, ref_id from ledger_entries where id = ${externalLedgerTransactionId}`),
    );
    assert.deepEqual(entry, [{ kind: 'counterparty.transfer', ref_id: tr.id }]);
    const got = await t.request('GET', `/api/v1/counterparty-transfers/${tr.id}`, { as: m });
    assert.equal(got.status, 200);
    assert.equal(got.raw, res.raw);
    await assertLedgerSound(t);
  });

  test("400 ValidationFailed: the same counterparty on both sides, or more than the source's available balance; nothing moves", async () => {
    const from = await fundedCounterparty(t, m, 1000);
    const to = await fundedCounterparty(t, m);
    const same = await transfer(m, { fromCounterpartyId: from, toCounterpartyId: from, amount: 10 });
    assert.equal(same.status, 400);
    assert.equal(errorsOf(same)[0]!.code, 'ValidationFailed');
    assert.equal(errorsOf(same)[0]!.source?.pointer, '/data/attributes/toCounterpartyId');
    const tooMuch = await transfer(m, { fromCounterpartyId: from, toCounterpartyId: to, amount: 1001 });
    assert.equal(tooMuch.status, 400);
    assert.equal(errorsOf(tooMuch)[0]!.code, 'ValidationFailed');
    assert.equal(errorsOf(tooMuch)[0]!.title, 'CounterpartyTransferValidationException');
    assert.match(errorsOf(tooMuch)[0]!.detail, /Insufficient balance/);
    assert.deepEqual(await counterpartyBalance(t, m, from), { pending: 0, available: 1000 });
    assert.deepEqual(await counterpartyBalance(t, m, to), { pending: 0, available: 0 });
    const list = await t.request('GET', `/api/v1/counterparty-transfers?filter[fromCounterpartyId]=${from}`, { as: m });
    assert.equal(list.body.meta.total, 0);
  });

  test("another merchant's counterparty on either side, or none: 404 CounterpartyNotFound, nothing moves; their transfer is 404 TransferNotFound", async () => {
    const mine = await fundedCounterparty(t, m, 1000);
    const theirs = await fundedCounterparty(t, other, 1000);
    for (const [fromCounterpartyId, toCounterpartyId] of [
      [mine, theirs],
      [theirs, mine],
      [mine, randomUUID()],
    ]) {
      const res = await transfer(m, { fromCounterpartyId, toCounterpartyId, amount: 100 });
      assert.equal(res.status, 404, res.raw);
      assert.equal(errorsOf(res)[0]!.code, 'CounterpartyNotFound');
    }
    assert.deepEqual(await counterpartyBalance(t, m, mine), { pending: 0, available: 1000 });
    assert.deepEqual(await counterpartyBalance(t, other, theirs), { pending: 0, available: 1000 });
    const theirTo = await fundedCounterparty(t, other);
    const done = await transfer(other, { fromCounterpartyId: theirs, toCounterpartyId: theirTo, amount: 100 });
    assert.equal(done.status, 201);
    const res = await t.request('GET', `/api/v1/counterparty-transfers/${done.body.data.id}`, { as: m });
    assert.equal(res.status, 404);
    assert.equal(errorsOf(res)[0]!.code, 'TransferNotFound');
    assert.equal(
      errorsOf(await t.request('GET', `/api/v1/counterparty-transfers/${randomUUID()}`, { as: other }))[0]!.code,
      'TransferNotFound',
    );
    assert.ok(
      !(await t.request('GET', '/api/v1/counterparty-transfers?page[limit]=50', { as: m })).raw.includes(
        done.body.data.id,
      ),
    );
  });

  test('a deleted counterparty is 404 on either side', async () => {
    const lm = await t.createMerchant();
    const a = await fundedCounterparty(t, lm, 500);
    const gone = await fundedCounterparty(t, lm);
    assert.equal((await t.request('DELETE', `/api/v1/counterparties/${gone}`, { as: lm })).status, 204);
    assert.equal((await transfer(lm, { fromCounterpartyId: a, toCounterpartyId: gone, amount: 100 })).status, 404);
    assert.equal((await transfer(lm, { fromCounterpartyId: gone, toCounterpartyId: a, amount: 100 })).status, 404);
    assert.deepEqual(await counterpartyBalance(t, lm, a), { pending: 0, available: 500 });
  });

  test('bad bodies are 400 with pointers and move nothing', async () => {
    const from = await fundedCounterparty(t, m, 1000);
    const to = await fundedCounterparty(t, m);
    const ok = { fromCounterpartyId: from, toCounterpartyId: to, amount: 100 };
    for (const [over, pointer] of [
      [{ amount: 0 }, '/data/attributes/amount'],
      [{ amount: 2_147_483_648 }, '/data/attributes/amount'],
      [{ amount: '100' }, '/data/attributes/amount'],
      [{ fromCounterpartyId: 'acme' }, '/data/attributes/fromCounterpartyId'],
      [{ toCounterpartyId: undefined }, '/data/attributes/toCounterpartyId'],
      [{ idempotencyKey: '' }, '/data/attributes/idempotencyKey'],
      [{ metadata: { orderId: 123 } }, '/data/attributes/metadata/orderId'],
      [{ metadata: ['x'] }, '/data/attributes/metadata'],
      [{ metadata: { ['k'.repeat(41)]: 'v' } }, '/data/attributes/metadata'],
      [
        { metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) },
        '/data/attributes/metadata',
      ],
      [{ note: 'x' }, '/data/attributes/note'],
    ] as const) {
      const res = await transfer(m, { ...ok, ...over });
      assert.equal(res.status, 400, JSON.stringify(over));
      assert.equal(errorsOf(res)[0]!.source?.pointer, pointer, JSON.stringify(over));
    }
    const noKey = await t.request('POST', '/api/v1/counterparty-transfers', {
      as: m,
      body: { data: { type: 'CounterpartyTransfer', attributes: ok } },
    });
    assert.equal(errorsOf(noKey)[0]!.source?.pointer, '/data/attributes/idempotencyKey');
    const wrongType = await t.request('POST', '/api/v1/counterparty-transfers', {
      as: m,
      body: { data: { type: 'Transfer', attributes: { ...ok, idempotencyKey: 'k' } } },
    });
    assert.equal(wrongType.status, 400);
    assert.deepEqual(await counterpartyBalance(t, m, from), { pending: 0, available: 1000 });
  });

  test('idempotency: the same key and attributes replay the first response (one transfer); other attributes are 409 IdempotencyKeyReused', async () => {
    const from = await fundedCounterparty(t, m, 1000);
    const to = await fundedCounterparty(t, m);
    const body = transferBody({ fromCounterpartyId: from, toCounterpartyId: to, amount: 400 });
    const first = await t.request('POST', '/api/v1/counterparty-transfers', { as: m, body });
    const again = await t.request('POST', '/api/v1/counterparty-transfers', { as: m, body });
    assert.equal(again.status, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.raw, first.raw);
    assert.deepEqual(await counterpartyBalance(t, m, to), { pending: 0, available: 400 });
    const reused = await transfer(m, {
      fromCounterpartyId: from,
      toCounterpartyId: to,
      amount: 401,
      idempotencyKey: body.data.attributes.idempotencyKey,
    });
    assert.equal(reused.status, 409);
    assert.equal(errorsOf(reused)[0]!.code, 'IdempotencyKeyReused');
    assert.deepEqual(await counterpartyBalance(t, m, from), { pending: 0, available: 600 });
  });

  test("the list: the merchant's own, newest first, paged; filters by side, status and creation time (inclusive); bad filters are 400", async () => {
    const lm = await t.createMerchant();
    const a = await fundedCounterparty(t, lm, 10_000, 'A');
    const b = await fundedCounterparty(t, lm, 10_000, 'B');
    const times: string[] = [];
    for (const [from, to, amount] of [
      [a, b, 100],
      [b, a, 200],
      [a, b, 300],
    ] as const) {
      const res = await transfer(lm, { fromCounterpartyId: from, toCounterpartyId: to, amount });
      times.push(res.body.data.attributes.createdAt);
      t.clock.advance(1000);
    }
    const amounts = async (query: string) => {
      const res = await t.request('GET', `/api/v1/counterparty-transfers${query}`, { as: lm });
      assert.equal(res.status, 200, res.raw);
      return res.body.data.map((x: { attributes: { amount: number } }) => x.attributes.amount);
    };
    assert.deepEqual(await amounts(''), [300, 200, 100]);
    assert.deepEqual(await amounts(`?filter[fromCounterpartyId]=${a}`), [300, 100]);
    assert.deepEqual(await amounts(`?filter[toCounterpartyId]=${a}`), [200]);
    assert.deepEqual(await amounts('?filter[status]=Completed'), [300, 200, 100]);
    assert.deepEqual(await amounts('?filter[status]=Failed'), []);
    assert.deepEqual(await amounts(`?filter[createdAfter]=${times[1]}`), [300, 200]);
    assert.deepEqual(await amounts(`?filter[createdBefore]=${times[1]}`), [200, 100]);
    const page = await t.request('GET', '/api/v1/counterparty-transfers?page[limit]=2', { as: lm });
    assert.deepEqual(page.body.meta, { total: 3, limit: 2, offset: 0 });
    assert.match(page.body.links.next, /page\[offset\]=2/);
    assert.equal(
      (await t.request('GET', '/api/v1/counterparty-transfers/', { as: lm })).body.meta.total,
      3,
      "with the trailing slash of Accrue's path",
    );
    for (const query of [
      '?filter[status]=Done',
      '?filter[fromCounterpartyId]=acme',
      '?filter[createdAfter]=soon',
      '?filter[amount]=1',
    ]) {
      const res = await t.request('GET', `/api/v1/counterparty-transfers${query}`, { as: lm });
      assert.equal(res.status, 400, query);
      assert.equal(errorsOf(res)[0]!.code, 'BadRequest');
    }
  });

  test(`transfers in opposite directions at once never deadlock and never overdraw (${dbKind})`, async () => {
    const lm = await t.createMerchant();
    const a = await fundedCounterparty(t, lm, 3000, 'A');
    const b = await fundedCounterparty(t, lm, 3000, 'B');
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        transfer(
          lm,
          i % 2
            ? { fromCounterpartyId: a, toCounterpartyId: b, amount: 250 }
            : { fromCounterpartyId: b, toCounterpartyId: a, amount: 250 },
        ),
      ),
    );
    assert.ok(
      results.every((r) => r.status === 201 || (r.status === 400 && errorsOf(r)[0]!.code === 'ValidationFailed')),
      results
        .filter((r) => r.status !== 201)
        .map((r) => r.raw)
        .join('\n'),
    );
    const ba = await counterpartyBalance(t, lm, a);
    const bb = await counterpartyBalance(t, lm, b);
    assert.equal(ba.available + bb.available, 6000);
    assert.ok(ba.available >= 0 && bb.available >= 0);
    await assertLedgerSound(t);
  });
});
