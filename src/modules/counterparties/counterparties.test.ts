// Counterparties through HTTP: Accrue's vocabulary on create, the resource's members, label
// updates, soft delete and what it refuses, and money arriving on a counterparty's deposit
// account (the sandbox simulation).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../db/open.ts';
import { createTestApp, dbKind, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';
import {
  counterpartyBalance,
  createCounterparty,
  createPayout,
  eventsOf,
  fundedCounterparty,
  ROUTING,
  simulateDeposit,
} from '../../test/counterparties.ts';
import { assertLedgerSound, deposit, fundedWallet } from '../../test/money.ts';

describe('counterparties', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  test("create takes Accrue's CreateCounterparty and Coffer's Counterparty; the resource carries Accrue's members; the account number is never shown in full", async () => {
    const accrue = await createCounterparty(t, m, { accountType: 'Savings' });
    assert.equal(accrue.status, 201, accrue.raw);
    const c = accrue.body.data;
    assert.equal(c.type, 'Counterparty');
    const { createdAt, updatedAt, internalBankAccount, ...rest } = c.attributes;
    assert.deepEqual(rest, {
      label: 'Acme Payroll',
      accountNumber: '****6789',
      accountNumberLast4: '6789',
      routingNumber: ROUTING,
      accountType: 'Savings',
      externalBankAccount: { accountNumber: '****6789', routingNumber: ROUTING, accountType: 'Savings' },
      balance: { pending: 0, available: 0 },
    });
    assert.equal(createdAt, updatedAt);
    // The sandbox provisions a deposit account: stable, 16 digits, the sandbox routing number.
    assert.match(internalBankAccount.accountNumber, /^[0-9]{16}$/);
    assert.deepEqual(
      { ...internalBankAccount, accountNumber: undefined },
      { accountNumber: undefined, routingNumber: '110000000', accountType: 'Checking' },
    );
    assert.ok(!accrue.raw.includes('000123456789'));
    const got = await t.request('GET', `/api/v1/counterparties/${c.id}`, { as: m });
    assert.equal(got.status, 200);
    assert.deepEqual(got.body.data.attributes.internalBankAccount, internalBankAccount);
    assert.ok(!got.raw.includes('000123456789'));

    const coffer = await createCounterparty(t, m, { accountType: 'checking' }, 'Counterparty');
    assert.equal(coffer.status, 201, coffer.raw);
    assert.equal(coffer.body.data.attributes.accountType, 'Checking');
    assert.notEqual(coffer.body.data.attributes.internalBankAccount.accountNumber, internalBankAccount.accountNumber);
  });

  test('the label is optional: without one, the account type and last four digits', async () => {
    const res = await t.request('POST', '/api/v1/counterparties', {
      as: m,
      body: {
        data: {
          type: 'CreateCounterparty',
          attributes: { accountNumber: '44445555', routingNumber: ROUTING, accountType: 'savings' },
        },
      },
    });
    assert.equal(res.status, 201, res.raw);
    assert.equal(res.body.data.attributes.label, 'Savings account ending 5555');
  });

  test('routing numbers must pass the ABA checksum', async () => {
    for (const routingNumber of ['021000022', '123456789', '000000001']) {
      const res = await createCounterparty(t, m, { routingNumber });
      assert.equal(res.status, 400, routingNumber);
      assert.equal(errorsOf(res)[0]!.source?.pointer, '/data/attributes/routingNumber');
    }
    for (const routingNumber of ['011000015', '021000021', '026009593', '122105155'])
      assert.equal((await createCounterparty(t, m, { routingNumber })).status, 201, routingNumber);
  });

  test('bad bodies are 400 with pointers, and create nothing', async () => {
    const lm = await t.createMerchant();
    for (const [over, pointer] of [
      [{ label: '' }, '/data/attributes/label'],
      [{ accountNumber: '12' }, '/data/attributes/accountNumber'],
      [{ accountNumber: '12345678901234567890' }, '/data/attributes/accountNumber'],
      [{ routingNumber: '12345' }, '/data/attributes/routingNumber'],
      [{ accountType: 'brokerage' }, '/data/attributes/accountType'],
      [{ accountType: 'CHECKING' }, '/data/attributes/accountType'],
      [{ nickname: 'x' }, '/data/attributes/nickname'],
    ] as const) {
      const res = await createCounterparty(t, lm, over);
      assert.equal(res.status, 400, JSON.stringify(over));
      assert.equal(errorsOf(res)[0]!.source?.pointer, pointer, JSON.stringify(over));
    }
    assert.equal((await createCounterparty(t, lm, {}, 'Payee')).status, 400);
    assert.equal((await t.request('GET', '/api/v1/counterparties', { as: lm })).body.meta.total, 0);
  });

  test("list is the merchant's own, newest first, with Coffer's meta; another merchant gets 404", async () => {
    const lm = await t.createMerchant();
    const a = await fundedCounterparty(t, lm, 0, 'A');
    t.clock.advance(1000);
    const b = await fundedCounterparty(t, lm, 0, 'B');
    const list = await t.request('GET', '/api/v1/counterparties', { as: lm });
    assert.deepEqual(
      list.body.data.map((c: { id: string }) => c.id),
      [b, a],
    );
    assert.equal(list.body.meta.total, 2);
    const theirs = await t.request('GET', `/api/v1/counterparties/${a}`, { as: other });
    assert.equal(theirs.status, 404);
    assert.equal(errorsOf(theirs)[0]!.code, 'CounterpartyNotFound');
  });

  describe('update (PATCH)', () => {
    test('changes the label (type UpdateCounterparty or Counterparty); updatedAt moves; the bank account cannot change', async () => {
      const id = await fundedCounterparty(t, m, 250);
      t.clock.advance(5000);
      const res = await t.request('PATCH', `/api/v1/counterparties/${id}`, {
        as: m,
        body: { data: { type: 'UpdateCounterparty', attributes: { label: 'Vendor 7' } } },
      });
      assert.equal(res.status, 200, res.raw);
      const a = res.body.data.attributes;
      assert.equal(a.label, 'Vendor 7');
      assert.ok(a.updatedAt > a.createdAt);
      assert.deepEqual(a.balance, { pending: 0, available: 250 });
      assert.equal(
        (await t.request('GET', `/api/v1/counterparties/${id}`, { as: m })).body.data.attributes.label,
        'Vendor 7',
      );
      const again = await t.request('PATCH', `/api/v1/counterparties/${id}`, {
        as: m,
        body: { data: { type: 'Counterparty', attributes: { label: 'Vendor 8' } } },
      });
      assert.equal(again.body.data.attributes.label, 'Vendor 8');
      // Nothing to change is a read.
      const none = await t.request('PATCH', `/api/v1/counterparties/${id}`, {
        as: m,
        body: { data: { type: 'UpdateCounterparty', attributes: {} } },
      });
      assert.equal(none.status, 200);
      assert.equal(none.body.data.attributes.label, 'Vendor 8');
    });

    test("bad input is 400 and changes nothing; an unknown or another merchant's id is 404", async () => {
      const id = await fundedCounterparty(t, m, 0, 'Kept');
      for (const [attributes, pointer] of [
        [{ label: '' }, '/data/attributes/label'],
        [{ label: 'x'.repeat(101) }, '/data/attributes/label'],
        [{ accountNumber: '99998888' }, '/data/attributes/accountNumber'],
        [{ routingNumber: '011000015' }, '/data/attributes/routingNumber'],
      ] as const) {
        const res = await t.request('PATCH', `/api/v1/counterparties/${id}`, {
          as: m,
          body: { data: { type: 'UpdateCounterparty', attributes } },
        });
        assert.equal(res.status, 400, JSON.stringify(attributes));
        assert.equal(errorsOf(res)[0]!.source?.pointer, pointer);
      }
      const theirs = await t.request('PATCH', `/api/v1/counterparties/${id}`, {
        as: other,
        body: { data: { type: 'UpdateCounterparty', attributes: { label: 'Stolen' } } },
      });
      assert.equal(theirs.status, 404);
      assert.equal(errorsOf(theirs)[0]!.code, 'CounterpartyNotFound');
      const unknown = await t.request('PATCH', '/api/v1/counterparties/00000000-0000-4000-8000-000000000000', {
        as: m,
        body: { data: { type: 'UpdateCounterparty', attributes: { label: 'x' } } },
      });
      assert.equal(unknown.status, 404);
      const got = await t.request('GET', `/api/v1/counterparties/${id}`, { as: m });
      assert.equal(got.body.data.attributes.label, 'Kept');
      assert.equal(got.body.data.attributes.updatedAt, got.body.data.attributes.createdAt);
    });
  });

  describe('delete', () => {
    test('204, then gone everywhere (GET, list, PATCH, payouts, disbursements); a second delete is 404', async () => {
      const lm = await t.createMerchant();
      const { wallet, account } = await fundedWallet(t, lm, 0);
      const id = await fundedCounterparty(t, lm);
      const res = await t.request('DELETE', `/api/v1/counterparties/${id}`, { as: lm });
      assert.equal(res.status, 204, res.raw);
      assert.equal(res.raw, '');
      assert.equal(
        errorsOf(await t.request('GET', `/api/v1/counterparties/${id}`, { as: lm }))[0]!.code,
        'CounterpartyNotFound',
      );
      assert.equal((await t.request('GET', '/api/v1/counterparties', { as: lm })).body.meta.total, 0);
      assert.equal(
        (
          await t.request('PATCH', `/api/v1/counterparties/${id}`, {
            as: lm,
            body: { data: { type: 'UpdateCounterparty', attributes: { label: 'x' } } },
          })
        ).status,
        404,
      );
      assert.equal((await t.request('GET', `/api/v1/counterparties/${id}/payouts`, { as: lm })).status, 404);
      assert.equal((await createPayout(t, lm, id, 1)).status, 404);
      const d = await deposit(t, lm, wallet.id, 1000, account.id, {
        disbursement: [{ counterpartyId: id, amount: 100 }],
      });
      assert.equal(d.status, 400, d.raw);
      assert.equal(errorsOf(d)[0]!.code, 'CounterpartyNotFound');
      assert.equal((await t.request('DELETE', `/api/v1/counterparties/${id}`, { as: lm })).status, 404);
    });

    test("another merchant's counterparty is 404 and stays", async () => {
      const id = await fundedCounterparty(t, m);
      const res = await t.request('DELETE', `/api/v1/counterparties/${id}`, { as: other });
      assert.equal(res.status, 404);
      assert.equal(errorsOf(res)[0]!.code, 'CounterpartyNotFound');
      assert.equal((await t.request('GET', `/api/v1/counterparties/${id}`, { as: m })).status, 200);
    });

    test('while it holds money (available, pending or negative): 409 CounterpartyHasBalance, nothing changes', async () => {
      const lm = await t.createMerchant({ achFee: 50 });
      const { wallet, account } = await fundedWallet(t, lm, 0);
      const holding = await fundedCounterparty(t, lm, 300);
      const pending = await fundedCounterparty(t, lm);
      // The fee counterparty pays the ACH fee and goes below zero; then it stops paying fees.
      const owing = await fundedCounterparty(t, lm);
      const settings = (feeCounterpartyId: string | null) =>
        t.adminRequest('PATCH', `/admin/v1/clients/${lm.clientId}`, {
          body: { data: { type: 'Client', attributes: { settings: { feeCounterpartyId } } } },
        });
      assert.equal((await settings(owing)).status, 200);
      assert.equal(
        (
          await deposit(t, lm, wallet.id, 1000, account.id, {
            disbursement: [{ counterpartyId: pending, amount: 200 }],
          })
        ).status,
        201,
      );
      assert.equal((await settings(null)).status, 200);
      assert.deepEqual(await counterpartyBalance(t, lm, owing), { pending: 0, available: -50 });
      for (const id of [holding, pending, owing]) {
        const res = await t.request('DELETE', `/api/v1/counterparties/${id}`, { as: lm });
        assert.equal(res.status, 409, res.raw);
        assert.equal(errorsOf(res)[0]!.code, 'CounterpartyHasBalance');
        assert.equal((await t.request('GET', `/api/v1/counterparties/${id}`, { as: lm })).status, 200);
      }
      assert.match(
        errorsOf(await t.request('DELETE', `/api/v1/counterparties/${holding}`, { as: lm }))[0]!.detail,
        /available 300/,
      );
      assert.match(
        errorsOf(await t.request('DELETE', `/api/v1/counterparties/${owing}`, { as: lm }))[0]!.detail,
        /available -50/,
      );
      // Paid out in full (and the payout completed), it can go.
      const payout = await createPayout(t, lm, holding, 300);
      assert.equal(payout.status, 201, payout.raw);
      await t.ctx.jobs.runOnce('counterparty-payouts');
      const inFlight = await t.request('DELETE', `/api/v1/counterparties/${holding}`, { as: lm });
      assert.equal(inFlight.status, 409, 'a Sent payout may still come back');
      assert.equal(errorsOf(inFlight)[0]!.code, 'CounterpartyInUse');
      assert.equal(
        (
          await t.request(
            'POST',
            `/api/v1/simulation/counterparties/${holding}/payouts/${payout.body.data.id}/complete`,
            { as: lm },
          )
        ).status,
        204,
      );
      assert.equal((await t.request('DELETE', `/api/v1/counterparties/${holding}`, { as: lm })).status, 204);
      await assertLedgerSound(t);
    });

    test("the merchant's fee counterparty, or one an unsettled payment disburses to: 409 CounterpartyInUse", async () => {
      const lm = await t.createMerchant();
      const fee = await fundedCounterparty(t, lm);
      assert.equal(
        (
          await t.adminRequest('PATCH', `/admin/v1/clients/${lm.clientId}`, {
            body: { data: { type: 'Client', attributes: { settings: { feeCounterpartyId: fee } } } },
          })
        ).status,
        200,
      );
      const res = await t.request('DELETE', `/api/v1/counterparties/${fee}`, { as: lm });
      assert.equal(res.status, 409);
      assert.equal(errorsOf(res)[0]!.code, 'CounterpartyInUse');
      assert.match(errorsOf(res)[0]!.detail, /feeCounterpartyId/);

      const payee = await fundedCounterparty(t, lm);
      const { wallet, account } = await fundedWallet(t, lm, 2000);
      const payment = await t.request('POST', '/api/v1/payments', {
        as: lm,
        body: {
          data: {
            type: 'CreatePayment',
            attributes: {
              walletId: wallet.id,
              amount: 1000,
              linkedAccountId: account.id,
              disbursement: [{ counterpartyId: payee, amount: 400 }],
            },
          },
        },
      });
      assert.equal(payment.status, 200, payment.raw);
      const unsettled = await t.request('DELETE', `/api/v1/counterparties/${payee}`, { as: lm });
      assert.equal(unsettled.status, 409);
      assert.equal(errorsOf(unsettled)[0]!.code, 'CounterpartyInUse');
      assert.equal((await t.request('GET', `/api/v1/counterparties/${payee}`, { as: lm })).status, 200);
    });

    test(`a delete racing with money arriving (an incoming payment, a transfer in, a payout out) never leaves money on a deleted counterparty (${dbKind})`, async () => {
      const lm = await t.createMerchant();
      const source = await fundedCounterparty(t, lm, 100_000);
      for (let round = 0; round < 8; round++) {
        const id = await fundedCounterparty(t, lm, round % 2 ? 0 : 500);
        const [del, incoming, transfer, payout] = await Promise.all([
          t.request('DELETE', `/api/v1/counterparties/${id}`, { as: lm }),
          t.request('POST', `/api/v1/simulation/counterparties/${id}/deposits`, {
            as: lm,
            body: { data: { type: 'SimulateCounterpartyDeposit', attributes: { amount: 100 } } },
          }),
          t.request('POST', '/api/v1/counterparty-transfers', {
            as: lm,
            body: {
              data: {
                type: 'CounterpartyTransfer',
                attributes: {
                  fromCounterpartyId: source,
                  toCounterpartyId: id,
                  amount: 50,
                  idempotencyKey: randomUUID(),
                },
              },
            },
          }),
          createPayout(t, lm, id, 500),
        ]);
        const all = [del, incoming, transfer, payout];
        assert.ok(
          all.every((r) => r.status < 500),
          all.map((r) => r.raw).join('\n'),
        );
        if (del.status === 204) {
          // Whatever came after the delete found the counterparty gone; nothing before it moved money.
          for (const r of [incoming, transfer]) assert.equal(r.status, 404, r.raw);
          const held = rowsOf<{ balance: number }>(
            await t.ctx.db.execute(sql`select balance from ledger_accounts where owner_id = ${id}`),
          );
          assert.deepEqual(
            held.map((r) => Number(r.balance)),
            [0, 0],
          );
        } else {
          assert.equal(del.status, 409, del.raw);
        }
      }
      await assertLedgerSound(t);
    });

    test('a deleted counterparty cannot become the fee counterparty', async () => {
      const lm = await t.createMerchant();
      const id = await fundedCounterparty(t, lm);
      assert.equal((await t.request('DELETE', `/api/v1/counterparties/${id}`, { as: lm })).status, 204);
      const res = await t.adminRequest('PATCH', `/admin/v1/clients/${lm.clientId}`, {
        body: { data: { type: 'Client', attributes: { settings: { feeCounterpartyId: id } } } },
      });
      assert.equal(res.status, 400, res.raw);
      assert.equal(errorsOf(res)[0]!.code, 'CounterpartyNotFound');
    });
  });

  describe('simulated incoming payment (sandbox)', () => {
    test("204: the amount is on the available balance at once, CounterpartyIncomingPayment fires with Accrue's payload, the ledger balances", async () => {
      const lm = await t.createMerchant();
      const id = await fundedCounterparty(t, lm);
      await simulateDeposit(t, lm, id, 2500);
      await simulateDeposit(t, lm, id, 500);
      assert.deepEqual(await counterpartyBalance(t, lm, id), { pending: 0, available: 3000 });
      const events = await eventsOf(t, lm, 'CounterpartyIncomingPayment');
      assert.equal(events.length, 2);
      const e = events.find((x) => x.attributes.amount === 2500)!;
      assert.equal(e.type, 'CounterpartyIncomingPayment');
      assert.deepEqual(
        { ...e.attributes, externalIncomingPaymentId: undefined, createdAt: undefined },
        {
          counterpartyId: id,
          merchantId: lm.clientId,
          amount: 2500,
          currency: 'USD',
          direction: 'credit',
          method: 'ach',
          asOfDate: '2026-06-01',
          externalIncomingPaymentId: undefined,
          createdAt: undefined,
        },
      );
      assert.match(e.attributes.externalIncomingPaymentId, /^ipd_[0-9a-f]{20}$/);
      await assertLedgerSound(t);
    });

    test("bad amounts are 400 and credit nothing; an unknown or another merchant's counterparty is 404", async () => {
      const lm = await t.createMerchant();
      const id = await fundedCounterparty(t, lm);
      for (const amount of [0, -5, 1.5, '100', 2_147_483_648]) {
        const res = await t.request('POST', `/api/v1/simulation/counterparties/${id}/deposits`, {
          as: lm,
          body: { data: { type: 'SimulateCounterpartyDeposit', attributes: { amount } } },
        });
        assert.equal(res.status, 400, String(amount));
        assert.equal(errorsOf(res)[0]!.source?.pointer, '/data/attributes/amount');
      }
      const wrongType = await t.request('POST', `/api/v1/simulation/counterparties/${id}/deposits`, {
        as: lm,
        body: { data: { type: 'Deposit', attributes: { amount: 5 } } },
      });
      assert.equal(wrongType.status, 400);
      const theirs = await t.request('POST', `/api/v1/simulation/counterparties/${id}/deposits`, {
        as: other,
        body: { data: { type: 'SimulateCounterpartyDeposit', attributes: { amount: 100 } } },
      });
      assert.equal(theirs.status, 404);
      assert.equal(errorsOf(theirs)[0]!.code, 'NotFound', "Accrue's code for the simulation");
      assert.deepEqual(await counterpartyBalance(t, lm, id), { pending: 0, available: 0 });
      assert.equal((await eventsOf(t, lm, 'CounterpartyIncomingPayment')).length, 0);
    });

    test('live deployments have no simulation and show no provisioned deposit account', async () => {
      const live = await createTestApp({ env: { COFFER_ENV: 'live', DATABASE_URL: 'postgres://unused/x' } });
      try {
        const lm = await live.createMerchant();
        const res = await createCounterparty(live, lm);
        assert.equal(res.status, 201, res.raw);
        assert.equal(res.body.data.attributes.internalBankAccount, undefined);
        const sim = await live.request('POST', `/api/v1/simulation/counterparties/${res.body.data.id}/deposits`, {
          as: lm,
          body: { data: { type: 'SimulateCounterpartyDeposit', attributes: { amount: 1 } } },
        });
        assert.equal(sim.status, 404);
      } finally {
        await live.close();
      }
    });
  });
});
