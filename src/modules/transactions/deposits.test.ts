// One-time deposits (docs/adr/0004-idempotency-in-the-database.md, docs/money.md#one-time-deposits): idempotency, KYC and account gating, limits,
// disbursements, the ACH fee, clearing and failing with their events, and the ledger.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../db/open.ts';
import { SandboxBankTransfers } from '../../providers/bank-transfers.ts';
import { webhookBody } from '../../test/fixtures.ts';
import {
  createTestApp,
  createUser,
  dbKind,
  drainJob,
  LOCAL_RECEIVERS,
  errorsOf,
  type Merchant,
  type TestApp,
} from '../../test/harness.ts';
import {
  approvedUser,
  assertLedgerSound,
  balanceOf,
  clearPending,
  createWallet,
  deposit,
  depositBody,
  fundedWallet,
  linkAccount,
} from '../../test/money.ts';
import { startReceiver, type Receiver } from '../../test/receiver.ts';

const ROUTING = '011000015'; // a valid ABA checksum

async function counterparty(t: TestApp, m: Merchant, label = 'Payee') {
  const res = await t.request('POST', '/api/v1/counterparties', {
    as: m,
    body: {
      data: {
        type: 'Counterparty',
        attributes: { label, accountNumber: '000123456789', routingNumber: ROUTING, accountType: 'checking' },
      },
    },
  });
  assert.equal(res.status, 201, res.raw);
  return res.body.data.id as string;
}

const cpBalance = async (t: TestApp, m: Merchant, id: string) =>
  (await t.request('GET', `/api/v1/counterparties/${id}`, { as: m })).body.data.attributes.balance;

describe('one-time deposits', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  const bank = new SandboxBankTransfers();
  before(async () => {
    t = await createTestApp({ env: LOCAL_RECEIVERS, providers: { bankTransfers: bank } });
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  async function setup(mm = m) {
    const user = await approvedUser(t, mm);
    const account = await linkAccount(t, mm, user.id);
    const wallet = await createWallet(t, mm, user.id);
    return { user, account, wallet };
  }

  test('201 Pending OneTimeDeposit; the wallet shows it pending; the bank pull job starts the transfer', async () => {
    const { account, wallet } = await setup();
    const res = await deposit(t, m, wallet.id, 5000, account.id);
    assert.equal(res.status, 201);
    const d = res.body.data;
    assert.equal(d.type, 'OneTimeDeposit');
    assert.deepEqual(d.attributes, {
      id: d.id,
      transactionId: d.id,
      status: 'Pending',
      amount: 5000,
      disbursement: [],
      charges: { fee: { amount: 0, type: 'ACHFee' } },
      deductions: { fee: 0 },
    });
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.pending.deposit, 5000);
    assert.equal(b.available.deposit, 0);
    assert.equal(b.total.total, 5000);
    assert.equal(bank.transfers.get(d.id), undefined, 'the request does not wait on the bank');
    await drainJob(t, 'bank-pulls');
    assert.equal(bank.transfers.get(d.id)?.amount, 5000);
    assert.equal(bank.transfers.get(d.id)?.direction, 'pull');
    const txn = await t.request('GET', `/api/v1/wallets/${wallet.id}/transactions/${d.id}`, { as: m });
    assert.equal(txn.body.data.attributes.status, 'Pending');
    assert.equal(txn.body.data.attributes.type, 'NonRecurring');
    // Sent once: a second round finds nothing unsent.
    assert.equal(await t.ctx.jobs.runOnce('bank-pulls'), 0);
    await assertLedgerSound(t);
  });

  test('a pull the provider refused is sent again by the next round, with the same reference', async () => {
    const flaky = new SandboxBankTransfers();
    let down = true;
    const pull = flaky.initiatePull.bind(flaky);
    flaky.initiatePull = async (r) => {
      if (down) throw new Error('provider unavailable');
      return pull(r);
    };
    const ft = await createTestApp({ providers: { bankTransfers: flaky } });
    try {
      const fm = await ft.createMerchant();
      const { wallet, account } = await fundedWallet(ft, fm, 0);
      down = false;
      await drainJob(ft, 'bank-pulls');
      down = true;
      const d = (await deposit(ft, fm, wallet.id, 1000, account.id)).body.data;
      assert.equal(await ft.ctx.jobs.runOnce('bank-pulls'), 0);
      down = false;
      assert.equal(await ft.ctx.jobs.runOnce('bank-pulls'), 1);
      assert.equal(flaky.transfers.get(d.id)?.reference, d.id);
    } finally {
      await ft.close();
    }
  });

  describe('idempotency', () => {
    test('the same key and attributes replay the first response byte for byte', async () => {
      const { account, wallet } = await setup();
      const body = depositBody(2500, account.id, { risk: { deviceSessionId: 'dev-1' } });
      const first = await t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, { as: m, body });
      assert.equal(first.status, 201);
      assert.equal(first.headers['idempotent-replayed'], undefined);
      t.clock.advance(60_000);
      const again = await t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, { as: m, body });
      assert.equal(again.status, 201);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.raw, first.raw, 'byte-identical');
      assert.equal((await balanceOf(t, m, wallet.id)).pending.deposit, 2500, 'one deposit only');
      // Attribute order in the request does not matter.
      const a = body.data.attributes;
      const reordered = {
        data: {
          attributes: {
            risk: a.risk,
            linkedAccountId: a.linkedAccountId,
            idempotencyKey: a.idempotencyKey,
            amount: a.amount,
          },
          type: 'OneTimeDeposit',
        },
      };
      assert.equal(
        (await t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, { as: m, body: reordered })).raw,
        first.raw,
      );
    });

    test('the same key with other attributes is 409 IdempotencyKeyReused', async () => {
      const { account, wallet } = await setup();
      const body = depositBody(2500, account.id);
      await t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, { as: m, body });
      const key = body.data.attributes.idempotencyKey;
      const variants = [
        depositBody(2600, account.id, { idempotencyKey: key }),
        depositBody(2500, account.id, { idempotencyKey: key, risk: { deviceSessionId: 'other' } }),
      ];
      for (const v of variants) {
        const res = await t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, { as: m, body: v });
        assert.equal(res.status, 409);
        assert.equal(errorsOf(res)[0]!.code, 'IdempotencyKeyReused');
      }
      // The same key on another wallet is other attributes too.
      const { wallet: w2, account: a2 } = await setup();
      const res = await t.request('POST', `/api/v1/wallets/${w2.id}/transactions`, {
        as: m,
        body: depositBody(2500, a2.id, { idempotencyKey: key }),
      });
      assert.equal(res.status, 409);
      assert.equal((await balanceOf(t, m, wallet.id)).pending.deposit, 2500);
    });

    test('keys are scoped by merchant and operation', async () => {
      const key = randomUUID();
      const mine = await setup();
      const theirs = await setup(other);
      assert.equal(
        (
          await t.request('POST', `/api/v1/wallets/${mine.wallet.id}/transactions`, {
            as: m,
            body: depositBody(1000, mine.account.id, { idempotencyKey: key }),
          })
        ).status,
        201,
      );
      assert.equal(
        (
          await t.request('POST', `/api/v1/wallets/${theirs.wallet.id}/transactions`, {
            as: other,
            body: depositBody(1000, theirs.account.id, { idempotencyKey: key }),
          })
        ).status,
        201,
      );
      const reward = await t.request('POST', '/api/v1/rewards', {
        as: m,
        body: {
          data: { type: 'IssueReward', attributes: { walletId: mine.wallet.id, amount: 100, idempotencyKey: key } },
        },
      });
      assert.equal(reward.status, 200);
    });

    test('a failed request stores nothing: fixing it and retrying with the same key works', async () => {
      const user = await approvedUser(t, m);
      const account = await linkAccount(t, m, user.id);
      const wallet = await createWallet(t, m, user.id);
      const key = randomUUID();
      const tooBig = await t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, {
        as: m,
        body: depositBody(5_000_000, account.id, { idempotencyKey: key }),
      });
      assert.equal(tooBig.status, 400);
      const ok = await t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, {
        as: m,
        body: depositBody(5000, account.id, { idempotencyKey: key }),
      });
      assert.equal(ok.status, 201);
    });

    test('the key is required, 1 to 255 characters', async () => {
      const { account, wallet } = await setup();
      for (const idempotencyKey of [undefined, '', 'k'.repeat(256), 42]) {
        const body = {
          data: {
            type: 'OneTimeDeposit',
            attributes: {
              amount: 1000,
              linkedAccountId: account.id,
              ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
            },
          },
        };
        const res = await t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, { as: m, body });
        assert.equal(res.status, 400, String(idempotencyKey));
        assert.equal(errorsOf(res)[0]!.source?.pointer, '/data/attributes/idempotencyKey');
      }
      assert.equal(
        (
          await t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, {
            as: m,
            body: depositBody(1000, account.id, { idempotencyKey: 'k'.repeat(255) }),
          })
        ).status,
        201,
      );
    });

    test('a request arriving while the first is in flight is 409 IdempotencyKeyInUse', {
      skip: dbKind === 'pglite' && 'PGlite is one session: requests cannot overlap',
    }, async () => {
      const { account, wallet } = await setup();
      const body = depositBody(3000, account.id);
      // Hold the wallet's pending-deposit account row so the first request stops mid-transaction.
      const { default: pg } = await import('pg');
      const pool = (t.ctx.db as unknown as { $client: InstanceType<typeof pg.Pool> }).$client;
      const blocker = await pool.connect();
      await blocker.query('begin');
      await blocker.query(`select 1 from ledger_accounts where owner_id = $1 and code = 'deposit.pending' for update`, [
        wallet.id,
      ]);
      const first = t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, { as: m, body });
      await new Promise((r) => setTimeout(r, 300));
      const second = await t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, { as: m, body });
      assert.equal(second.status, 409);
      assert.equal(errorsOf(second)[0]!.code, 'IdempotencyKeyInUse');
      assert.equal(second.headers['retry-after'], '1');
      await blocker.query('rollback');
      blocker.release();
      assert.equal((await first).status, 201);
      const third = await t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, { as: m, body });
      assert.equal(third.status, 201);
      assert.equal(third.raw, (await first).raw);
      assert.equal((await balanceOf(t, m, wallet.id)).pending.deposit, 3000);
    });
  });

  describe('gating', () => {
    test('KYC must be Approved: 400 InvalidKycStatus otherwise', async () => {
      for (const email of [undefined, 'p@highrisk.test', 'p@declined.test']) {
        const u = await createUser(t, m);
        if (email) {
          await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m });
          const { kycApplication } = await import('../../test/fixtures.ts');
          await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, { as: m, body: kycApplication(email) });
          t.clock.advance(500);
          await t.ctx.jobs.runOnce('kyc-decisions');
        }
        const a = await linkAccount(t, m, u.id);
        const w = await createWallet(t, m, u.id);
        const res = await deposit(t, m, w.id, 1000, a.id);
        assert.equal(res.status, 400, String(email));
        assert.equal(errorsOf(res)[0]!.code, 'InvalidKycStatus');
        assert.equal((await balanceOf(t, m, w.id)).total.total, 0);
      }
    });

    test("the linked account must be the user's and connected", async () => {
      const { wallet } = await setup();
      const stranger = await approvedUser(t, m);
      const theirs = await linkAccount(t, m, stranger.id);
      const r1 = await deposit(t, m, wallet.id, 1000, theirs.id);
      assert.equal(r1.status, 400);
      assert.equal(errorsOf(r1)[0]!.code, 'LinkedAccountNotFound');
      assert.equal(errorsOf(r1)[0]!.source?.pointer, '/data/attributes/linkedAccountId');
      const r2 = await deposit(t, m, wallet.id, 1000, '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b');
      assert.equal(errorsOf(r2)[0]!.code, 'LinkedAccountNotFound');
      const { user, wallet: w3 } = await setup();
      const gone = await linkAccount(t, m, user.id);
      await t.request('DELETE', `/api/v1/users/${user.id}/linked-accounts/${gone.id}`, { as: m });
      const r3 = await deposit(t, m, w3.id, 1000, gone.id);
      assert.equal(r3.status, 400);
      assert.equal(errorsOf(r3)[0]!.code, 'LinkedAccountDisconnected');
    });

    test('at least 100 cents and at most maxOneTimeDeposit (400 ExceedsMaxOneTimeDepositAmount)', async () => {
      const { account, wallet } = await setup();
      const small = await deposit(t, m, wallet.id, 99, account.id);
      assert.equal(small.status, 400);
      assert.equal(errorsOf(small)[0]!.code, 'ValidationError');
      assert.equal(errorsOf(small)[0]!.source?.pointer, '/data/attributes/amount');
      assert.equal((await deposit(t, m, wallet.id, 100, account.id)).status, 201);
      assert.equal((await deposit(t, m, wallet.id, 1_000_000, account.id)).status, 201);
      const big = await deposit(t, m, wallet.id, 1_000_001, account.id);
      assert.equal(big.status, 400);
      assert.equal(errorsOf(big)[0]!.code, 'ExceedsMaxOneTimeDepositAmount');
      // The limit is the merchant's setting.
      const lm = await t.createMerchant({ maxOneTimeDeposit: 2000 });
      const s = await setup(lm);
      assert.equal(
        errorsOf(await deposit(t, lm, s.wallet.id, 2001, s.account.id))[0]!.code,
        'ExceedsMaxOneTimeDepositAmount',
      );
      assert.equal((await deposit(t, lm, s.wallet.id, 2000, s.account.id)).status, 201);
    });

    test('bad bodies are 400 with pointers; amounts are integers', async () => {
      const { account, wallet } = await setup();
      const cases: [Record<string, unknown>, string][] = [
        [{ amount: 10.5 }, '/data/attributes/amount'],
        [{ amount: '1000' }, '/data/attributes/amount'],
        [{ amount: -1000 }, '/data/attributes/amount'],
        [{ amount: 1e13 }, '/data/attributes/amount'],
        [{ linkedAccountId: 'abc' }, '/data/attributes/linkedAccountId'],
        [{ disbursement: [{ amount: 0, counterpartyId: randomUUID() }] }, '/data/attributes/disbursement/0/amount'],
        [{ disbursement: [{ amount: 10 }] }, '/data/attributes/disbursement/0/counterpartyId'],
        [{ risk: { deviceSessionId: '' } }, '/data/attributes/risk/deviceSessionId'],
        [{ risk: { ip: '1.2.3.4' } }, '/data/attributes/risk/ip'],
        [{ currency: 'USD' }, '/data/attributes/currency'],
      ];
      for (const [over, pointer] of cases) {
        const res = await t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, {
          as: m,
          body: depositBody(1000, account.id, over),
        });
        assert.equal(res.status, 400, JSON.stringify(over));
        assert.ok(
          errorsOf(res).some((e) => e.source?.pointer === pointer),
          `${JSON.stringify(over)}: ${res.raw}`,
        );
      }
      assert.equal((await balanceOf(t, m, wallet.id)).total.total, 0, 'nothing half-written');
    });
  });

  describe('disbursements and the ACH fee', () => {
    test('disbursements go to counterparties (pending, then available); the rest to the wallet', async () => {
      const { account, wallet } = await setup();
      const a = await counterparty(t, m, 'A');
      const b = await counterparty(t, m, 'B');
      const res = await deposit(t, m, wallet.id, 10_000, account.id, {
        disbursement: [
          { amount: 1500, counterpartyId: a },
          { amount: 500, counterpartyId: b },
        ],
      });
      assert.equal(res.status, 201, res.raw);
      assert.deepEqual(res.body.data.attributes.disbursement, [
        { counterpartyId: a, amount: 1500, fee: 0, remit: false },
        { counterpartyId: b, amount: 500, fee: 0, remit: false },
      ]);
      assert.equal((await balanceOf(t, m, wallet.id)).pending.deposit, 8000);
      assert.deepEqual(await cpBalance(t, m, a), { pending: 1500, available: 0 });
      await clearPending(t, m, wallet.id);
      assert.deepEqual(await cpBalance(t, m, a), { pending: 0, available: 1500 });
      assert.deepEqual(await cpBalance(t, m, b), { pending: 0, available: 500 });
      assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 8000);
      await assertLedgerSound(t);
    });

    test('disbursement rules: sum at most the amount, known counterparties, each once', async () => {
      const { account, wallet } = await setup();
      const a = await counterparty(t, m);
      const over = await deposit(t, m, wallet.id, 1000, account.id, {
        disbursement: [{ amount: 1001, counterpartyId: a }],
      });
      assert.equal(over.status, 400);
      assert.equal(errorsOf(over)[0]!.source?.pointer, '/data/attributes/disbursement');
      const all = await deposit(t, m, wallet.id, 1000, account.id, {
        disbursement: [{ amount: 1000, counterpartyId: a }],
      });
      assert.equal(all.status, 201, 'everything disbursed is fine');
      const theirs = await counterparty(t, other);
      const unknown = await deposit(t, m, wallet.id, 1000, account.id, {
        disbursement: [
          { amount: 10, counterpartyId: a },
          { amount: 10, counterpartyId: theirs },
        ],
      });
      assert.equal(unknown.status, 400);
      assert.equal(errorsOf(unknown)[0]!.code, 'CounterpartyNotFound');
      assert.equal(errorsOf(unknown)[0]!.source?.pointer, '/data/attributes/disbursement/1/counterpartyId');
      const twice = await deposit(t, m, wallet.id, 1000, account.id, {
        disbursement: [
          { amount: 10, counterpartyId: a },
          { amount: 20, counterpartyId: a },
        ],
      });
      assert.equal(twice.status, 400);
    });

    test('with a fee counterparty, the ACHFee is charged to it', async () => {
      const fm = await t.createMerchant();
      const feePayer = await counterparty(t, fm, 'Fees');
      const upd = await t.adminRequest('PATCH', `/admin/v1/clients/${fm.clientId}`, {
        body: { data: { type: 'Client', attributes: { settings: { achFee: 75, feeCounterpartyId: feePayer } } } },
      });
      assert.equal(upd.status, 200, upd.raw);
      const { account, wallet } = await setup(fm);
      const res = await deposit(t, fm, wallet.id, 5000, account.id);
      assert.deepEqual(res.body.data.attributes.charges, { fee: { amount: 75, type: 'ACHFee' } });
      assert.deepEqual(res.body.data.attributes.deductions, { fee: 0 });
      assert.equal((await balanceOf(t, fm, wallet.id)).pending.deposit, 5000, 'the user gets the whole amount');
      assert.deepEqual(await cpBalance(t, fm, feePayer), { pending: 0, available: -75 });
      const txn = await t.request('GET', `/api/v1/wallets/${wallet.id}/transactions/${res.body.data.id}`, { as: fm });
      assert.deepEqual(txn.body.data.attributes.charges, { fee: { amount: 75, type: 'ACHFee' } });
      await assertLedgerSound(t);
    });

    test('without a fee counterparty, the fee is deducted from the credit', async () => {
      const fm = await t.createMerchant({ achFee: 50 });
      const { account, wallet } = await setup(fm);
      const res = await deposit(t, fm, wallet.id, 5000, account.id);
      assert.deepEqual(res.body.data.attributes.deductions, { fee: 50 });
      assert.equal((await balanceOf(t, fm, wallet.id)).pending.deposit, 4950);
      const tiny = await deposit(t, fm, wallet.id, 100, account.id, { disbursement: [] });
      assert.equal(tiny.status, 201);
      const cp = await counterparty(t, fm);
      const uncovered = await deposit(t, fm, wallet.id, 100, account.id, {
        disbursement: [{ amount: 60, counterpartyId: cp }],
      });
      assert.equal(uncovered.status, 400, 'the amount must cover disbursements and the fee');
    });

    test("the fee counterparty setting must name one of the merchant's counterparties", async () => {
      const fm = await t.createMerchant();
      const theirs = await counterparty(t, other);
      const res = await t.adminRequest('PATCH', `/admin/v1/clients/${fm.clientId}`, {
        body: { data: { type: 'Client', attributes: { settings: { feeCounterpartyId: theirs } } } },
      });
      assert.equal(res.status, 400);
      assert.equal(errorsOf(res)[0]!.code, 'CounterpartyNotFound');
      assert.equal(errorsOf(res)[0]!.source?.pointer, '/data/attributes/settings/feeCounterpartyId');
    });
  });

  describe('clearing and failing', () => {
    let rx: Receiver;
    let em: Merchant;
    before(async () => {
      rx = await startReceiver();
      em = await t.createMerchant({ depositRewardBps: 150 });
      await t.request('POST', '/api/v1/webhooks', {
        as: em,
        body: webhookBody({ url: rx.url, topics: ['TransactionCleared', 'TransactionFailed'] }),
      });
    });
    after(() => rx.close());

    test('clearing: pending → available, the accrue reward credited, TransactionCleared', async () => {
      const { user, account, wallet } = await setup(em);
      const d = (await deposit(t, em, wallet.id, 10_000, account.id)).body.data;
      t.clock.advance(3_600_000);
      await clearPending(t, em, wallet.id);
      const b = await balanceOf(t, em, wallet.id);
      assert.equal(b.pending.deposit, 0);
      assert.equal(b.available.deposit, 10_000);
      assert.equal(b.available.reward.accrue, 150, '1.5% of 10,000');
      assert.equal(b.available.total, 10_150);
      const txn = (await t.request('GET', `/api/v1/wallets/${wallet.id}/transactions/${d.id}`, { as: em })).body.data
        .attributes;
      assert.equal(txn.status, 'Cleared');
      assert.equal(txn.clearedAt, t.clock.now().toISOString());
      await t.ctx.webhooks.runOnce();
      const ev = JSON.parse(rx.received.at(-1)!.body);
      assert.equal(ev.data.attributes.topic, 'TransactionCleared');
      assert.equal(ev.data.attributes.walletId, wallet.id);
      assert.equal(ev.data.attributes.userId, user.id);
      assert.equal(ev.included[0].type, 'Transaction');
      assert.equal(ev.included[0].id, d.id);
      assert.equal(ev.included[0].attributes.status, 'Cleared');
      // Nothing pending: clearing again changes nothing.
      await clearPending(t, em, wallet.id);
      assert.deepEqual(await balanceOf(t, em, wallet.id), b);
      await assertLedgerSound(t);
    });

    test('failing: the money returns, the fee is refunded, TransactionFailed; only Pending can fail', async () => {
      const fm = await t.createMerchant();
      const feePayer = await counterparty(t, fm, 'Fees');
      const cp = await counterparty(t, fm, 'Payee');
      await t.adminRequest('PATCH', `/admin/v1/clients/${fm.clientId}`, {
        body: { data: { type: 'Client', attributes: { settings: { achFee: 30, feeCounterpartyId: feePayer } } } },
      });
      const frx = await startReceiver();
      try {
        await t.request('POST', '/api/v1/webhooks', {
          as: fm,
          body: webhookBody({ url: frx.url, topics: ['TransactionFailed'] }),
        });
        const { account, wallet } = await setup(fm);
        const d = (
          await deposit(t, fm, wallet.id, 4000, account.id, { disbursement: [{ amount: 1000, counterpartyId: cp }] })
        ).body.data;
        const res = await t.request('POST', `/api/v1/simulation/wallets/${wallet.id}/fail-transaction`, {
          as: fm,
          body: { data: { type: 'Transaction', attributes: { transactionId: d.id, reason: 'R02: account closed' } } },
        });
        assert.equal(res.status, 204);
        assert.deepEqual(
          await balanceOf(t, fm, wallet.id),
          await balanceOf(t, fm, (await createWallet(t, fm, (await createUser(t, fm)).id)).id),
          'back to zero',
        );
        assert.deepEqual(await cpBalance(t, fm, cp), { pending: 0, available: 0 });
        assert.deepEqual(await cpBalance(t, fm, feePayer), { pending: 0, available: 0 }, 'the fee is refunded');
        const txn = (await t.request('GET', `/api/v1/wallets/${wallet.id}/transactions/${d.id}`, { as: fm })).body.data
          .attributes;
        assert.equal(txn.status, 'Failed');
        assert.equal(txn.failureReason, 'R02: account closed');
        await t.ctx.webhooks.runOnce();
        const ev = JSON.parse(frx.received.at(-1)!.body);
        assert.equal(ev.data.attributes.topic, 'TransactionFailed');
        assert.equal(ev.included[0].attributes.status, 'Failed');
        const again = await t.request('POST', `/api/v1/simulation/wallets/${wallet.id}/fail-transaction`, {
          as: fm,
          body: { data: { type: 'Transaction', attributes: { transactionId: d.id } } },
        });
        assert.equal(again.status, 400);
        assert.equal(errorsOf(again)[0]!.code, 'IllegalOperation');
        const none = await t.request('POST', `/api/v1/simulation/wallets/${wallet.id}/fail-transaction`, { as: fm });
        assert.equal(none.status, 400, 'nothing pending to fail');
        await assertLedgerSound(t);
      } finally {
        await frx.close();
      }
    });

    test('without a transaction id the oldest pending deposit fails; a cleared one cannot', async () => {
      const { account, wallet } = await setup();
      const first = (await deposit(t, m, wallet.id, 1000, account.id)).body.data;
      t.clock.advance(1000);
      const second = (await deposit(t, m, wallet.id, 2000, account.id)).body.data;
      await t.request('POST', `/api/v1/simulation/wallets/${wallet.id}/fail-transaction`, { as: m });
      const list = (await t.request('GET', `/api/v1/wallets/${wallet.id}/transactions`, { as: m })).body.data;
      assert.deepEqual(
        list.map((x: { id: string; attributes: { status: string } }) => [x.id, x.attributes.status]),
        [
          [second.id, 'Pending'],
          [first.id, 'Failed'],
        ],
      );
      await clearPending(t, m, wallet.id);
      const cleared = await t.request('POST', `/api/v1/simulation/wallets/${wallet.id}/fail-transaction`, {
        as: m,
        body: { data: { type: 'Transaction', attributes: { transactionId: second.id } } },
      });
      assert.equal(cleared.status, 400);
      assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 2000);
    });
  });

  describe("Accrue's simulation names: clear-pending/{type}, FailPendingTransaction", () => {
    const demoCard = async (walletId: string) => {
      const res = await t.request('POST', `/api/v1/simulation/wallets/${walletId}/backup-linked-account`, { as: m });
      assert.equal(res.status, 201, res.raw);
      return res.body.data.id as string;
    };
    const clear = (walletId: string, type: string, as = m) =>
      t.request('POST', `/api/v1/simulation/wallets/${walletId}/clear-pending/${type}`, { as });
    const statusOf = async (walletId: string, id: string) =>
      (await t.request('GET', `/api/v1/wallets/${walletId}/transactions/${id}`, { as: m })).body.data.attributes.status;

    test('a deposit charged to a demo card is card-funded: no bank pull, cleared by clear-pending/card only', async () => {
      const { account, wallet } = await setup();
      const card = await demoCard(wallet.id);
      const byBank = (await deposit(t, m, wallet.id, 1_000, account.id)).body.data;
      const byCard = await deposit(t, m, wallet.id, 2_500, card);
      assert.equal(byCard.status, 201, byCard.raw);
      await t.ctx.jobs.runOnce('bank-pulls');
      assert.equal(bank.transfers.get(byBank.id)?.direction, 'pull');
      assert.equal(bank.transfers.get(byCard.body.data.id), undefined, 'a card is not pulled over ACH');
      assert.equal((await clear(wallet.id, 'bank')).status, 204);
      assert.deepEqual(
        [await statusOf(wallet.id, byBank.id), await statusOf(wallet.id, byCard.body.data.id)],
        ['Cleared', 'Pending'],
      );
      assert.equal((await balanceOf(t, m, wallet.id)).pending.deposit, 2_500);
      assert.equal((await clear(wallet.id, 'card')).status, 204);
      assert.equal(await statusOf(wallet.id, byCard.body.data.id), 'Cleared');
      const b = await balanceOf(t, m, wallet.id);
      assert.equal(b.available.deposit, 3_500);
      assert.equal(b.pending.deposit, 0);
      await assertLedgerSound(t);
    });

    test("any other type is 400 InvalidTransactionType and clears nothing; another merchant's wallet is 404", async () => {
      const { account, wallet } = await setup();
      const d = (await deposit(t, m, wallet.id, 1_000, account.id)).body.data;
      for (const type of ['ach', 'Bank', 'x'.repeat(40)]) {
        const res = await clear(wallet.id, type);
        assert.equal(res.status, 400, type);
        assert.equal(errorsOf(res)[0]!.code, 'InvalidTransactionType');
        assert.equal(errorsOf(res)[0]!.source?.parameter, 'type');
      }
      assert.equal(await statusOf(wallet.id, d.id), 'Pending');
      for (const type of ['bank', 'card']) {
        for (const [id, as] of [
          [wallet.id, other],
          [randomUUID(), m],
        ] as const) {
          const res = await clear(id, type, as);
          assert.equal(res.status, 404, `${type} ${id}`);
          assert.equal(errorsOf(res)[0]!.code, 'WalletNotFound');
        }
      }
      assert.equal(await statusOf(wallet.id, d.id), 'Pending');
    });

    test("FailPendingTransaction takes Accrue's reasons (default Unknown); another reason is 400 and fails nothing", async () => {
      const { account, wallet } = await setup();
      const first = (await deposit(t, m, wallet.id, 1_000, account.id)).body.data;
      const second = (await deposit(t, m, wallet.id, 1_000, account.id)).body.data;
      const fail = (attributes: Record<string, unknown>) =>
        t.request('POST', `/api/v1/simulation/wallets/${wallet.id}/fail-transaction`, {
          as: m,
          body: { data: { type: 'FailPendingTransaction', attributes } },
        });
      const bad = await fail({ transactionId: first.id, reason: 'R02: account closed' });
      assert.equal(bad.status, 400);
      assert.equal(errorsOf(bad)[0]!.source?.pointer, '/data/attributes/reason');
      assert.equal(await statusOf(wallet.id, first.id), 'Pending');
      assert.equal((await fail({ transactionId: first.id, reason: 'InsufficientFunds' })).status, 204);
      assert.equal((await fail({ transactionId: second.id })).status, 204);
      const reasons = await Promise.all(
        [first.id, second.id].map(
          async (id) =>
            (await t.request('GET', `/api/v1/wallets/${wallet.id}/transactions/${id}`, { as: m })).body.data.attributes
              .failureReason,
        ),
      );
      assert.deepEqual(reasons, ['InsufficientFunds', 'Unknown']);
      const foreign = await t.request('POST', `/api/v1/simulation/wallets/${wallet.id}/fail-transaction`, {
        as: other,
        body: { data: { type: 'FailPendingTransaction', attributes: {} } },
      });
      assert.equal(foreign.status, 404);
      await assertLedgerSound(t);
    });
  });

  describe('transactions list and read', () => {
    test('only NonRecurring lists data; any other type is an empty list', async () => {
      const { account, wallet } = await fundedWallet(t, m, 1500);
      await deposit(t, m, wallet.id, 700, account.id);
      const all = await t.request('GET', `/api/v1/wallets/${wallet.id}/transactions`, { as: m });
      assert.equal(all.body.meta.total, 2);
      assert.deepEqual(
        all.body.data.map((x: { attributes: { amount: number } }) => x.attributes.amount),
        [700, 1500],
      );
      assert.equal(
        (await t.request('GET', `/api/v1/wallets/${wallet.id}/transactions?type=NonRecurring`, { as: m })).body.meta
          .total,
        2,
      );
      for (const type of ['Recurring', 'RoundUp', 'x']) {
        const res = await t.request('GET', `/api/v1/wallets/${wallet.id}/transactions?type=${type}&page[limit]=5`, {
          as: m,
        });
        assert.equal(res.status, 200);
        assert.deepEqual(res.body.data, []);
        assert.deepEqual(res.body.meta, { total: 0, limit: 5, offset: 0 });
      }
    });

    test('a transaction of another wallet or merchant is 404', async () => {
      const a = await fundedWallet(t, m, 1000);
      const b = await fundedWallet(t, m, 1000);
      const [txn] = (await t.request('GET', `/api/v1/wallets/${a.wallet.id}/transactions`, { as: m })).body.data;
      const wrongWallet = await t.request('GET', `/api/v1/wallets/${b.wallet.id}/transactions/${txn.id}`, { as: m });
      assert.equal(wrongWallet.status, 404);
      assert.equal(errorsOf(wrongWallet)[0]!.code, 'TransactionNotFound');
      assert.equal(
        (await t.request('GET', `/api/v1/wallets/${a.wallet.id}/transactions/${txn.id}`, { as: other })).status,
        404,
      );
    });
  });

  test('the ledger: each deposit is balanced postings; the invariant check catches tampering', async () => {
    await assertLedgerSound(t);
    const { wallet } = await fundedWallet(t, m, 1234);
    const [acc] = rowsOf<{ id: string }>(
      await t.ctx.db.execute(
        sql`select id from ledger_accounts where owner_id = ${wallet.id} and code = 'deposit.available'`,
      ),
    );
    // Corrupt a cached balance behind the ledger's back: the check must notice.
    await t.ctx.db.execute(sql`update ledger_accounts set balance = balance + 1 where id = ${acc!.id}`);
    const { verifyLedger } = await import('../../ledger/invariants.ts');
    const violations = await verifyLedger(t.ctx.db);
    assert.ok(
      violations.some((v) => v.rule === 'balance equals postings' && v.detail.includes(acc!.id)),
      JSON.stringify(violations),
    );
    await t.ctx.db.execute(sql`update ledger_accounts set balance = balance - 1 where id = ${acc!.id}`);
    await assertLedgerSound(t);
  });

  // The ledger's tables carry no foreign keys (db/schema.ts, HOT_PATH_REFERENCES): the invariant
  // check is what reports a posting whose entry or account does not exist.
  test('the invariant check reports a posting whose entry or account is missing, each with what it lacks', async () => {
    const { wallet } = await fundedWallet(t, m, 1000);
    const [account] = rowsOf<{ id: string }>(
      await t.ctx.db.execute(
        sql`select id from ledger_accounts where owner_id = ${wallet.id} and code = 'deposit.available'`,
      ),
    );
    const entry = randomUUID();
    const [ghostAccount, ghostEntry] = [randomUUID(), randomUUID()];
    const noAccount = [randomUUID(), randomUUID()];
    const noEntry = [randomUUID(), randomUUID()];
    // Balanced pairs, so that only the references are wrong: an entry of two postings to an
    // account that does not exist, and two postings of an entry that does not exist that cancel
    // out on a real account (its balance still equals its postings).
    await t.ctx.db.transaction(async (tx) => {
      await tx.execute(
        sql`insert into ledger_entries (id, client_id, kind, ref_type, ref_id) values (${entry}, ${m.clientId}, 'test', 'test', 'dangling')`,
      );
      await tx.execute(sql`insert into ledger_postings (id, client_id, entry_id, account_id, amount) values
        (${noAccount[0]}, ${m.clientId}, ${entry}, ${ghostAccount}, 5), (${noAccount[1]}, ${m.clientId}, ${entry}, ${ghostAccount}, -5),
        (${noEntry[0]}, ${m.clientId}, ${ghostEntry}, ${account!.id}, 5), (${noEntry[1]}, ${m.clientId}, ${ghostEntry}, ${account!.id}, -5)`);
    });
    try {
      const violations = await (await import('../../ledger/invariants.ts')).verifyLedger(t.ctx.db);
      assert.deepEqual(
        violations.map((v) => `${v.rule}: ${v.detail}`).sort(),
        [...noAccount.map((id) => `posting ${id}: no account`), ...noEntry.map((id) => `posting ${id}: no entry`)]
          .map((d) => `postings reference entries and accounts: ${d}`)
          .sort(),
      );
    } finally {
      await t.ctx.db.execute(sql`delete from ledger_postings where id in ${[...noAccount, ...noEntry]}`);
      await t.ctx.db.execute(sql`delete from ledger_entries where id = ${entry}`);
    }
    await assertLedgerSound(t);
  });
});
