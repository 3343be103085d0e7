// Counterparty payouts through HTTP: the ledger movement and its events, the bank push sent by
// the job (once, whatever fails around it), completion and return, the list's filters,
// idempotency keys, bad input, another merchant's ids, and payouts racing for one balance.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { SandboxBankTransfers, type TransferRequest } from '../../providers/bank-transfers.ts';
import { createTestApp, dbKind, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import {
  counterpartyBalance,
  createPayout,
  eventsOf,
  fundedCounterparty,
  payoutBody,
} from '../../test/counterparties.ts';
import { assertLedgerSound } from '../../test/money.ts';

/** The sandbox bank, unreachable once for each reference in `failOnce`. */
class FlakyBank extends SandboxBankTransfers {
  readonly failOnce = new Set<string>();
  readonly pushes: TransferRequest[] = [];
  override async initiatePush(r: TransferRequest) {
    this.pushes.push(r);
    if (this.failOnce.delete(r.reference)) throw new Error('bank unreachable');
    return super.initiatePush(r);
  }
}

describe('counterparty payouts', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  const bank = new FlakyBank();
  before(async () => {
    t = await createTestApp({ providers: { bankTransfers: bank } });
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  const payouts = (as: Merchant, counterpartyId: string, query = '') =>
    t.request('GET', `/api/v1/counterparties/${counterpartyId}/payouts${query}`, { as });
  const simulate = (
    as: Merchant,
    counterpartyId: string,
    payoutId: string,
    outcome: 'complete' | 'return',
    body?: unknown,
  ) =>
    t.request('POST', `/api/v1/simulation/counterparties/${counterpartyId}/payouts/${payoutId}/${outcome}`, {
      as,
      ...(body ? { body } : {}),
    });
  const statusOf = async (as: Merchant, counterpartyId: string, payoutId: string) =>
    (await payouts(as, counterpartyId)).body.data.find((p: { id: string }) => p.id === payoutId)?.attributes.status;

  test('201 Pending: the money leaves the available balance at once; the job pushes it (Sent); the bank completes it; an event at each step', async () => {
    const lm = await t.createMerchant();
    const cp = await fundedCounterparty(t, lm, 10_000);
    const res = await createPayout(t, lm, cp, 4000);
    assert.equal(res.status, 201, res.raw);
    const p = res.body.data;
    assert.equal(p.type, 'CounterpartyPayout');
    assert.deepEqual(
      { ...p.attributes, createdAt: undefined, updatedAt: undefined },
      {
        amount: 4000,
        status: 'Pending',
        description: null,
        effectiveDate: '2026-06-01',
        counterpartyId: cp,
        returnCode: null,
        returnReason: null,
        createdAt: undefined,
        updatedAt: undefined,
      },
    );
    assert.deepEqual(await counterpartyBalance(t, lm, cp), { pending: 0, available: 6000 });

    t.clock.advance(1000);
    assert.ok((await t.ctx.jobs.runOnce('counterparty-payouts')) >= 1);
    const push = bank.transfers.get(p.id);
    assert.deepEqual(
      push,
      {
        reference: p.id,
        amount: 4000,
        bankAccount: {
          routingNumber: '021000021',
          accountNumber: '000123456789',
          accountType: 'checking',
          holderName: 'Payee',
        },
        direction: 'push',
      },
      "the push goes to the counterparty's account by its numbers, opened from their sealed form",
    );
    assert.equal(await statusOf(lm, cp, p.id), 'Sent');

    assert.equal((await simulate(lm, cp, p.id, 'complete')).status, 204);
    const listed = (await payouts(lm, cp)).body.data[0];
    assert.equal(listed.attributes.status, 'Completed');
    assert.ok(listed.attributes.updatedAt > listed.attributes.createdAt);
    assert.deepEqual(
      await counterpartyBalance(t, lm, cp),
      { pending: 0, available: 6000 },
      'completing moves no money',
    );

    // Accrue's event payloads, one per step, newest first.
    const steps = [];
    for (const topic of ['CounterpartyPayoutCreated', 'CounterpartyPayoutSent', 'CounterpartyPayoutCompleted']) {
      const [e, ...more] = await eventsOf(t, lm, topic);
      assert.equal(more.length, 0, topic);
      assert.equal(e!.type, topic);
      assert.equal(e!.id, p.id);
      steps.push(e!.attributes.status);
      assert.deepEqual(
        { ...e!.attributes, status: undefined, createdAt: undefined, updatedAt: undefined },
        {
          payoutId: p.id,
          counterpartyId: cp,
          merchantId: lm.clientId,
          amount: 4000,
          currency: 'USD',
          status: undefined,
          description: null,
          effectiveDate: '2026-06-01',
          createdAt: undefined,
          updatedAt: undefined,
        },
      );
    }
    assert.deepEqual(steps, ['Pending', 'Sent', 'Completed']);
    await assertLedgerSound(t);
  });

  test('returned by the receiving bank: Returned with the code and reason, the money back on the available balance', async () => {
    const lm = await t.createMerchant();
    const cp = await fundedCounterparty(t, lm, 5000);
    const p = (await createPayout(t, lm, cp, 5000)).body.data;
    await t.ctx.jobs.runOnce('counterparty-payouts');
    assert.deepEqual(await counterpartyBalance(t, lm, cp), { pending: 0, available: 0 });
    const res = await simulate(lm, cp, p.id, 'return', {
      data: { type: 'SimulateCounterpartyPayoutReturn', attributes: { returnCode: 'R03', returnReason: 'No account' } },
    });
    assert.equal(res.status, 204, res.raw);
    assert.deepEqual(await counterpartyBalance(t, lm, cp), { pending: 0, available: 5000 });
    const listed = (await payouts(lm, cp)).body.data[0].attributes;
    assert.deepEqual([listed.status, listed.returnCode, listed.returnReason], ['Returned', 'R03', 'No account']);
    const [e] = await eventsOf(t, lm, 'CounterpartyPayoutReturned');
    assert.deepEqual(
      [e!.attributes.status, e!.attributes.returnCode, e!.attributes.returnReason],
      ['Returned', 'R03', 'No account'],
    );
    // Without a body: R01.
    const q = (await createPayout(t, lm, cp, 100)).body.data;
    await t.ctx.jobs.runOnce('counterparty-payouts');
    assert.equal((await simulate(lm, cp, q.id, 'return')).status, 204);
    assert.equal((await payouts(lm, cp)).body.data[0].attributes.returnCode, 'R01');
    await assertLedgerSound(t);
  });

  test("only a Sent payout completes or returns (400 IllegalOperation otherwise); unknown and other merchants' payouts are 404", async () => {
    const lm = await t.createMerchant();
    const cp = await fundedCounterparty(t, lm, 1000);
    const p = (await createPayout(t, lm, cp, 600)).body.data;
    for (const outcome of ['complete', 'return'] as const) {
      const pending = await simulate(lm, cp, p.id, outcome);
      assert.equal(pending.status, 400, outcome);
      assert.equal(errorsOf(pending)[0]!.code, 'IllegalOperation');
      assert.match(errorsOf(pending)[0]!.detail, /Pending/);
    }
    await t.ctx.jobs.runOnce('counterparty-payouts');
    for (const outcome of ['complete', 'return'] as const) {
      const theirs = await simulate(other, cp, p.id, outcome);
      assert.equal(theirs.status, 404, outcome);
      assert.equal(errorsOf(theirs)[0]!.code, 'CounterpartyNotFound');
    }
    const unknown = await simulate(lm, cp, randomUUID(), 'complete');
    assert.equal(errorsOf(unknown)[0]!.code, 'PayoutNotFound');
    const otherCounterparty = await fundedCounterparty(t, lm);
    assert.equal(
      errorsOf(await simulate(lm, otherCounterparty, p.id, 'complete'))[0]!.code,
      'PayoutNotFound',
      'a payout belongs to its counterparty',
    );
    const badCode = await simulate(lm, cp, p.id, 'return', {
      data: { type: 'SimulateCounterpartyPayoutReturn', attributes: { returnCode: 'bounce' } },
    });
    assert.equal(badCode.status, 400);
    assert.equal(await statusOf(lm, cp, p.id), 'Sent', 'nothing above changed it');
    assert.equal((await simulate(lm, cp, p.id, 'complete')).status, 204);
    for (const outcome of ['complete', 'return'] as const)
      assert.equal(
        errorsOf(await simulate(lm, cp, p.id, outcome))[0]!.code,
        'IllegalOperation',
        `${outcome} after Completed`,
      );
    assert.deepEqual(await counterpartyBalance(t, lm, cp), { pending: 0, available: 400 });
    await assertLedgerSound(t);
  });

  test('more than the available balance: 400 InsufficientBalance, nothing written', async () => {
    const lm = await t.createMerchant();
    const cp = await fundedCounterparty(t, lm, 999);
    const res = await createPayout(t, lm, cp, 1000);
    assert.equal(res.status, 400, res.raw);
    const [e] = errorsOf(res);
    assert.equal(e!.code, 'InsufficientBalance');
    assert.equal(e!.title, 'CounterpartyInsufficientBalanceException');
    assert.equal(e!.source?.pointer, '/data/attributes/amount');
    assert.deepEqual(await counterpartyBalance(t, lm, cp), { pending: 0, available: 999 });
    assert.equal((await payouts(lm, cp)).body.meta.total, 0);
    assert.equal((await eventsOf(t, lm, 'CounterpartyPayoutCreated')).length, 0);
    // An empty counterparty cannot pay anything out.
    assert.equal((await createPayout(t, lm, await fundedCounterparty(t, lm), 1)).status, 400);
  });

  test('bad bodies are 400 and write nothing', async () => {
    const lm = await t.createMerchant();
    const cp = await fundedCounterparty(t, lm, 5000);
    const bodies: [unknown, string][] = [
      [
        { data: { type: 'CreateCounterpartyPayout', attributes: { amount: 0, idempotencyKey: 'k' } } },
        '/data/attributes/amount',
      ],
      [
        { data: { type: 'CreateCounterpartyPayout', attributes: { amount: 2_147_483_648, idempotencyKey: 'k' } } },
        '/data/attributes/amount',
      ],
      [
        { data: { type: 'CreateCounterpartyPayout', attributes: { amount: 10.5, idempotencyKey: 'k' } } },
        '/data/attributes/amount',
      ],
      [
        { data: { type: 'CreateCounterpartyPayout', attributes: { amount: '100', idempotencyKey: 'k' } } },
        '/data/attributes/amount',
      ],
      [{ data: { type: 'CreateCounterpartyPayout', attributes: { amount: 100 } } }, '/data/attributes/idempotencyKey'],
      [
        { data: { type: 'CreateCounterpartyPayout', attributes: { amount: 100, idempotencyKey: '' } } },
        '/data/attributes/idempotencyKey',
      ],
      [
        { data: { type: 'CreateCounterpartyPayout', attributes: { amount: 100, idempotencyKey: 'x'.repeat(256) } } },
        '/data/attributes/idempotencyKey',
      ],
      [
        {
          data: {
            type: 'CreateCounterpartyPayout',
            attributes: { amount: 100, idempotencyKey: 'k', description: 'x' },
          },
        },
        '/data/attributes/description',
      ],
      [{ data: { type: 'Payout', attributes: { amount: 100, idempotencyKey: 'k' } } }, '/data/type'],
    ];
    for (const [body, pointer] of bodies) {
      const res = await t.request('POST', `/api/v1/counterparties/${cp}/payouts`, { as: lm, body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(errorsOf(res)[0]!.source?.pointer, pointer, JSON.stringify(body));
    }
    assert.equal(
      (await t.request('POST', '/api/v1/counterparties/not-a-uuid/payouts', { as: lm, body: payoutBody(100) })).status,
      400,
    );
    assert.equal((await payouts(lm, cp)).body.meta.total, 0);
    assert.deepEqual(await counterpartyBalance(t, lm, cp), { pending: 0, available: 5000 });
  });

  test("another merchant's counterparty: 404 for the payout and the list, and nothing moves", async () => {
    const cp = await fundedCounterparty(t, m, 3000);
    const res = await createPayout(t, other, cp, 100);
    assert.equal(res.status, 404);
    assert.equal(errorsOf(res)[0]!.code, 'CounterpartyNotFound');
    assert.equal(errorsOf(await payouts(other, cp))[0]!.code, 'CounterpartyNotFound');
    assert.equal((await payouts(m, cp)).body.meta.total, 0);
    assert.deepEqual(await counterpartyBalance(t, m, cp), { pending: 0, available: 3000 });
    assert.equal(errorsOf(await payouts(m, randomUUID()))[0]!.code, 'CounterpartyNotFound');
  });

  test('idempotency: the same key and amount replay the first response byte for byte (one payout, one event); other attributes are 409', async () => {
    const lm = await t.createMerchant();
    const cp = await fundedCounterparty(t, lm, 10_000);
    const key = randomUUID();
    const first = await createPayout(t, lm, cp, 1500, key);
    assert.equal(first.status, 201);
    t.clock.advance(60_000);
    const again = await createPayout(t, lm, cp, 1500, key);
    assert.equal(again.status, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.raw, first.raw);
    assert.equal((await payouts(lm, cp)).body.meta.total, 1);
    assert.equal((await eventsOf(t, lm, 'CounterpartyPayoutCreated')).length, 1);
    assert.deepEqual(await counterpartyBalance(t, lm, cp), { pending: 0, available: 8500 });

    const otherAmount = await createPayout(t, lm, cp, 1600, key);
    assert.equal(otherAmount.status, 409);
    assert.equal(errorsOf(otherAmount)[0]!.code, 'IdempotencyKeyReused');
    const otherCounterparty = await createPayout(t, lm, await fundedCounterparty(t, lm, 5000), 1500, key);
    assert.equal(errorsOf(otherCounterparty)[0]!.code, 'IdempotencyKeyReused');
    // A refused request stores nothing: the key is free once the balance allows it.
    const big = randomUUID();
    assert.equal((await createPayout(t, lm, cp, 9000, big)).status, 400);
    await t.request('POST', `/api/v1/simulation/counterparties/${cp}/deposits`, {
      as: lm,
      body: { data: { type: 'SimulateCounterpartyDeposit', attributes: { amount: 500 } } },
    });
    assert.equal((await createPayout(t, lm, cp, 9000, big)).status, 201);
    // Keys are per merchant.
    const theirs = await fundedCounterparty(t, other, 2000);
    assert.equal((await createPayout(t, other, theirs, 1500, key)).status, 201);
  });

  test('the job: an unreachable bank leaves the payout Pending and the next run sends the same reference; runs record each payout once', async () => {
    const lm = await t.createMerchant();
    const cp = await fundedCounterparty(t, lm, 1000);
    const p = (await createPayout(t, lm, cp, 700)).body.data;
    bank.failOnce.add(p.id);
    await t.ctx.jobs.runOnce('counterparty-payouts');
    assert.equal(await statusOf(lm, cp, p.id), 'Pending');
    await t.ctx.jobs.runOnce('counterparty-payouts');
    assert.equal(await statusOf(lm, cp, p.id), 'Sent');
    const mine = bank.pushes.filter((r) => r.reference === p.id);
    assert.equal(mine.length, 2, 'tried twice');
    assert.deepEqual(mine[0], mine[1], 'with the same reference and amount: one transfer at the bank');
    await t.ctx.jobs.runOnce('counterparty-payouts');
    assert.equal(bank.pushes.filter((r) => r.reference === p.id).length, 2, 'a Sent payout is not pushed again');
    assert.equal((await eventsOf(t, lm, 'CounterpartyPayoutSent')).length, 1);
  });

  test('the list: newest first, paged, every filter with inclusive bounds; bad filters are 400', async () => {
    const lm = await t.createMerchant();
    const cp = await fundedCounterparty(t, lm, 100_000);
    const ids: string[] = [];
    const times: string[] = [];
    for (const amount of [1000, 2000, 3000, 4000]) {
      const res = await createPayout(t, lm, cp, amount);
      ids.push(res.body.data.id);
      times.push(res.body.data.attributes.createdAt);
      t.clock.advance(86_400_000); // a day apart: 2026-06-01 .. 06-04
    }
    await t.ctx.jobs.runOnce('counterparty-payouts');
    assert.equal((await simulate(lm, cp, ids[0]!, 'complete')).status, 204);
    const amounts = async (query: string) => {
      const res = await payouts(lm, cp, query);
      assert.equal(res.status, 200, `${query}: ${res.raw}`);
      return res.body.data.map((p: { attributes: { amount: number } }) => p.attributes.amount);
    };
    assert.deepEqual(await amounts(''), [4000, 3000, 2000, 1000]);
    assert.deepEqual(await amounts('?filter[status]=Completed'), [1000]);
    assert.deepEqual(await amounts('?filter[status]=Sent'), [4000, 3000, 2000]);
    assert.deepEqual(await amounts('?filter[status]=Returned'), []);
    assert.deepEqual(await amounts('?filter[minAmount]=2000&filter[maxAmount]=3000'), [3000, 2000]);
    assert.deepEqual(
      await amounts(`?filter[createdAfter]=${times[1]}&filter[createdBefore]=${times[2]}`),
      [3000, 2000],
    );
    assert.deepEqual(
      await amounts('?filter[effectiveDateFrom]=2026-06-02&filter[effectiveDateTo]=2026-06-03'),
      [3000, 2000],
    );
    assert.deepEqual(await amounts('?filter[effectiveDateFrom]=2026-06-04'), [4000]);
    const page = await payouts(lm, cp, '?page[limit]=3&page[offset]=1&filter[minAmount]=1');
    assert.deepEqual(page.body.meta, { total: 4, limit: 3, offset: 1 });
    assert.deepEqual(
      page.body.data.map((p: { attributes: { amount: number } }) => p.attributes.amount),
      [3000, 2000, 1000],
    );
    assert.equal(page.body.links.next, null);
    assert.match(page.body.links.prev, /page\[offset\]=0/);
    for (const query of [
      '?filter[status]=Bounced',
      '?filter[minAmount]=-1',
      '?filter[maxAmount]=lots',
      '?filter[createdAfter]=yesterday',
      '?filter[effectiveDateTo]=2026-13-01',
      '?filter[counterpartyId]=x',
      '?page[limit]=0',
    ]) {
      const res = await payouts(lm, cp, query);
      assert.equal(res.status, 400, query);
      assert.equal(errorsOf(res)[0]!.code, 'BadRequest', query);
    }
  });

  test(`payouts racing for one balance never take it below zero (${dbKind})`, async () => {
    const lm = await t.createMerchant();
    const cp = await fundedCounterparty(t, lm, 10_000);
    const results = await Promise.all(Array.from({ length: 30 }, () => createPayout(t, lm, cp, 1000)));
    const created = results.filter((r) => r.status === 201).length;
    const refused = results.filter((r) => r.status === 400 && errorsOf(r)[0]!.code === 'InsufficientBalance').length;
    assert.equal(
      created,
      10,
      results
        .filter((r) => r.status !== 201 && r.status !== 400)
        .map((r) => r.raw)
        .join('\n'),
    );
    assert.equal(refused, 20);
    assert.deepEqual(await counterpartyBalance(t, lm, cp), { pending: 0, available: 0 });
    assert.equal((await payouts(lm, cp)).body.meta.total, 10);

    // Random sizes, with transfers out of the same balance racing them.
    const cp2 = await fundedCounterparty(t, lm, 20_000);
    const sink = await fundedCounterparty(t, lm);
    const sizes = Array.from({ length: 40 }, (_, i) => 300 + ((i * 7919) % 1700));
    const raced = await Promise.all(
      sizes.map((amount, i) =>
        i % 3 === 0
          ? t.request('POST', '/api/v1/counterparty-transfers', {
              as: lm,
              body: {
                data: {
                  type: 'CounterpartyTransfer',
                  attributes: { fromCounterpartyId: cp2, toCounterpartyId: sink, amount, idempotencyKey: randomUUID() },
                },
              },
            })
          : createPayout(t, lm, cp2, amount),
      ),
    );
    assert.ok(
      raced.every((r) => r.status === 201 || r.status === 400),
      raced.map((r) => r.status).join(','),
    );
    const spent = raced.reduce((sum, r, i) => sum + (r.status === 201 ? sizes[i]! : 0), 0);
    assert.ok(spent <= 20_000, `spent ${spent}`);
    const left = await counterpartyBalance(t, lm, cp2);
    assert.equal(left.available, 20_000 - spent);
    assert.ok(left.available >= 0);
    await assertLedgerSound(t);
  });
});
