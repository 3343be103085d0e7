// Live runs on the operator's provider adapters (docs/providers.md), here the reference adapter:
// no sandbox provider is ever wired; KYC, bank linking, transfers, card issuing and the card
// processor are signed calls keyed by Coffer's references; deposits, withdrawal pushes,
// counterparty payouts and captured payments end by what the bank reports; a lost, late, malformed or wrongly signed
// answer changes nothing and the retry carries the same key, so nothing happens twice.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { PROVIDER_PORTS } from '../config.ts';
import { rowsOf } from '../db/open.ts';
import { clientAccountIds } from '../ledger/accounts.ts';
import { recordIncomingPayment } from '../modules/counterparties/payouts.ts';
import { counterpartyBalance, createCounterparty, createPayout } from '../test/counterparties.ts';
import { accrueKycApplication, kycApplication } from '../test/fixtures.ts';
import {
  createTestApp,
  createUser,
  drainJob,
  errorsOf,
  PROVIDER_SIGNING_SECRET,
  providerEnv,
  type Merchant,
  type TestApp,
} from '../test/harness.ts';
import { approvedUser, assertLedgerSound, balanceOf, createWallet, deposit, intentFor } from '../test/money.ts';
import { isLuhnValid } from './card-issuing.ts';
import { AdapterClient, HttpPort, ProviderError } from './http/client.ts';
import { ReferenceAdapter } from './http/reference-adapter.ts';
import { createProviders } from './index.ts';
import { SandboxKyc } from './kyc.ts';

describe("live on the operator's provider adapters", () => {
  let adapter: ReferenceAdapter;
  let url: string;
  let t: TestApp;
  let m: Merchant;

  before(async () => {
    adapter = new ReferenceAdapter({ signingSecret: PROVIDER_SIGNING_SECRET, settleMs: 0, kycDecisionMs: 0 });
    url = await adapter.listen();
    t = await createTestApp({
      env: { COFFER_ENV: 'live', DATABASE_URL: 'postgres://unused/x', ...providerEnv(url), PROVIDER_TIMEOUT_MS: '400' },
    });
    m = await t.createMerchant();
  });
  after(async () => {
    await t.close();
    await adapter.close();
  });
  beforeEach(() => {
    adapter.faults.length = 0;
    adapter.settleMs = 0;
    adapter.kycDecisionMs = 0;
  });

  /** Moves the clock past the next status check (or a lease) and runs the job once. */
  const run = async (job: string, advanceMs = 1_100) => {
    t.clock.advance(advanceMs);
    return t.ctx.jobs.runOnce(job);
  };
  /** As run, then again until the job finds nothing (drainJob: a run takes every merchant's due work, a batch at a time). */
  const drain = async (job: string, advanceMs = 1_100) => {
    t.clock.advance(advanceMs);
    return drainJob(t, job);
  };
  const linkAccount = async (merchant: Merchant, userId: string) => {
    const res = await t.adminRequest('POST', `/admin/v1/clients/${merchant.clientId}/users/${userId}/linked-accounts`, {
      body: { data: { type: 'LinkedAccount', attributes: { token: `public-token-${userId}` } } },
    });
    assert.equal(res.status, 201, res.raw);
    return res.body.data as { id: string; attributes: Record<string, any> };
  };
  const transaction = async (merchant: Merchant, walletId: string, id: string) => {
    const res = await t.request('GET', `/api/v1/wallets/${walletId}/transactions/${id}`, { as: merchant });
    assert.equal(res.status, 200, res.raw);
    return res.body.data.attributes as { status: string; failureReason?: string | null };
  };
  const transfer = async (reference: string) =>
    rowsOf<{ status: string; failure_reason: string | null; purpose: string }>(
      await t.ctx.db.execute(
        sql`select status, failure_reason, purpose from bank_transfers where reference = ${reference}`,
      ),
    )[0];
  const payment = async (merchant: Merchant, id: string) => {
    const res = await t.request('GET', `/api/v1/payments/${id}`, { as: merchant });
    assert.equal(res.status, 200, res.raw);
    return res.body.data.attributes as { status: string; failureReason?: string | null };
  };
  /** An approved user (the adapter's answer), an account linked through the adapter, and a wallet. */
  const linkedWallet = async (merchant: Merchant) => {
    const user = await approvedUser(t, merchant);
    const account = await linkAccount(merchant, user.id);
    const wallet = await createWallet(t, merchant, user.id);
    return { user, account, wallet };
  };
  /** The same, the wallet holding `amount` cleared cents. */
  const fundedWallet = async (merchant: Merchant, amount: number) => {
    const { user, account, wallet } = await linkedWallet(merchant);
    const d = await deposit(t, merchant, wallet.id, amount, account.id);
    assert.equal(d.status, 201, d.raw);
    await run('bank-pulls', 0);
    await run('bank-transfer-status');
    assert.equal((await transaction(merchant, wallet.id, d.body.data.id)).status, 'Cleared');
    return { user, account, wallet };
  };

  test('every port is served by the adapter: live never wires a sandbox provider', () => {
    for (const port of PROVIDER_PORTS) assert.ok(t.ctx.providers[port] instanceof HttpPort, port);
    assert.throws(
      () => createProviders(t.ctx.config, t.ctx.db, { kyc: new SandboxKyc('http://pay.test') }),
      /live never runs a sandbox provider: kyc has no adapter \(KYC_PROVIDER_URL\)/,
    );
  });

  test('a sandbox uses an adapter for each port that has a URL and its own providers for the rest', async () => {
    const sandbox = await createTestApp({ env: { CARD_PROCESSOR_PROVIDER_URL: url, PROVIDER_SIGNING_SECRET } });
    try {
      assert.ok(sandbox.ctx.providers.cardProcessor instanceof HttpPort);
      assert.ok(sandbox.ctx.providers.kyc instanceof SandboxKyc);
      assert.equal(
        sandbox.ctx.providers.bankTransfers.reportsStatus,
        false,
        "the sandbox's bank: settlement simulated, as without adapters",
      );
    } finally {
      await sandbox.close();
    }
  });

  test('KYC is decided by the adapter: a "Fake Person" born 1900-01-01 stays Pending while it has not decided, then is what it says', async () => {
    adapter.kycDecisionMs = 3_600_000;
    const u = await createUser(t, m);
    await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m });
    const applied = await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, {
      as: m,
      body: kycApplication('fake.person@declined.test', {
        firstName: 'Fake',
        lastName: 'Person',
        dateOfBirth: '1900-01-01',
      }),
    });
    assert.equal(applied.status, 200, applied.raw);
    // Far past the sandbox's half second: nobody but the adapter decides.
    for (let i = 0; i < 5; i++) await run('kyc-decisions', 2_000);
    const kyc = async () =>
      (await t.request('GET', `/api/v1/users/${u.id}/kyc`, { as: m })).body.data.attributes.status;
    assert.equal(await kyc(), 'Pending');

    const sent = adapter.calls.filter((c) => c.operation === 'submitKycApplication' && c.body?.userId === u.id);
    assert.equal(sent.length, 1, 'the application is sent once');
    assert.ok(sent[0]!.signed);
    assert.deepEqual(
      {
        firstName: sent[0]!.body!.firstName,
        lastName: sent[0]!.body!.lastName,
        dateOfBirth: sent[0]!.body!.dateOfBirth,
      },
      { firstName: 'Fake', lastName: 'Person', dateOfBirth: '1900-01-01' },
    );
    const reference = sent[0]!.idempotencyKey!;
    assert.ok(
      adapter.callsFor(reference).filter((c) => c.operation === 'getKycApplication').length >= 1,
      'then its answer is asked for',
    );

    adapter.kycDecisionMs = 0;
    await run('kyc-decisions', 600_000);
    assert.equal(await kyc(), 'Denied', "the adapter's decision");
  });

  test('document verification through the adapter: review asked about, a link keyed by its id, the finished upload reported once, then the review decides', async () => {
    const u = await createUser(t, m);
    await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m });
    const applied = await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, {
      as: m,
      body: accrueKycApplication('review@highrisk.com'),
    });
    assert.equal(applied.status, 200, applied.raw);
    await run('kyc-decisions', 0);
    const kyc = async () =>
      (await t.request('GET', `/api/v1/users/${u.id}/kyc/status`, { as: m })).body.data.attributes.status;
    assert.equal(await kyc(), 'ManualReview', "the adapter's first answer");
    const [sent] = adapter.calls.filter((c) => c.operation === 'submitKycApplication' && c.body?.userId === u.id);
    const reference = sent!.idempotencyKey!;
    assert.deepEqual(
      [sent!.body!.phone, sent!.body!.ipAddress, (sent!.body!.address as { country: string }).country],
      ['5551234567', '203.0.113.7', 'US'],
      "Accrue's fields reach the provider",
    );
    const asked = () => adapter.callsFor(reference).filter((c) => c.operation === 'getKycApplication').length;
    const before = asked();
    await run('kyc-decisions', 2_000);
    assert.equal(asked(), before + 1, 'an application in review is asked about');

    const linkBody = {
      data: { type: 'DocumentVerificationLink', attributes: { redirectUrl: 'https://shop.example.com/kyc/done' } },
    };
    adapter.faults.push({ path: '/v1/kyc/document-links', kind: 'status', status: 500 });
    const failed = await t.request('POST', `/api/v1/users/${u.id}/kyc/document-verification-link`, {
      as: m,
      body: linkBody,
    });
    assert.equal(failed.status, 503, failed.raw);
    assert.equal(errorsOf(failed)[0]!.code, 'ServiceUnavailable');
    const link = await t.request('POST', `/api/v1/users/${u.id}/kyc/document-verification-link`, {
      as: m,
      body: linkBody,
    });
    assert.equal(link.status, 200, link.raw);
    const [linkCall] = adapter.callsFor(link.body.data.id);
    assert.deepEqual(
      [linkCall?.operation, linkCall?.signed, linkCall?.body?.application, linkCall?.body?.redirectUrl],
      ['createKycDocumentLink', true, reference, 'https://shop.example.com/kyc/done'],
    );
    assert.match(link.body.data.attributes.url, /^https:\/\/verify\.example\.com\/session\//, "the adapter's page");

    // The user uploaded; the report's answer is lost once: sent again with the same key, done once.
    adapter.kycDecisionMs = 3_600_000;
    const done = await t.request('POST', `/api/v1/users/${u.id}/kyc/document-verification/complete`, { as: m });
    assert.equal(done.body.data.attributes.status, 'Pending');
    adapter.faults.push({ path: '/v1/kyc/documents', method: 'POST', kind: 'delay', ms: 1_000 });
    await run('kyc-decisions', 0);
    await run('kyc-decisions', 61_000);
    const reports = adapter.calls.filter(
      (c) => c.operation === 'submitKycDocuments' && c.body?.application === reference,
    );
    assert.equal(reports.length, 2);
    assert.deepEqual(
      reports.map((c) => [c.idempotencyKey, c.replayed]),
      [
        [`${reference}:documents:${Date.parse(done.body.data.attributes.documentsSubmittedAt)}`, false],
        [`${reference}:documents:${Date.parse(done.body.data.attributes.documentsSubmittedAt)}`, true],
      ],
    );
    assert.equal(await kyc(), 'Pending', 'the review has not decided');
    await run('kyc-decisions', 600_000);
    assert.equal(
      adapter.calls.filter((c) => c.operation === 'submitKycDocuments' && c.body?.application === reference).length,
      2,
      'reported, then asked about',
    );
    adapter.kycDecisionMs = 0;
    await run('kyc-decisions', 600_000);
    assert.equal(await kyc(), 'Approved', "the review's decision");
  });

  test('deposits: pulled with the transaction id as Idempotency-Key, then cleared or failed by what the bank reports', async () => {
    const { user, account, wallet } = await linkedWallet(m);
    const linked = adapter.calls.find((c) => c.operation === 'linkAccount' && c.idempotencyKey === account.id);
    assert.equal(
      linked?.body?.token,
      `public-token-${user.id}`,
      "the linking flow's token reaches the adapter, keyed by the new account's id",
    );
    assert.equal(account.attributes.provider, 'Reference');
    const ok = (await deposit(t, m, wallet.id, 5000, account.id)).body.data;
    const bad = (await deposit(t, m, wallet.id, 5004, account.id)).body.data;
    adapter.settleMs = 3_600_000;
    await run('bank-pulls', 0);
    for (const d of [ok, bad]) {
      const [call] = adapter.callsFor(d.id);
      assert.ok(call?.signed && call.method === 'POST', 'a signed POST keyed by the transaction id');
      const made = adapter.transfers.get(d.id);
      assert.deepEqual([made?.direction, made?.amount], ['pull', d.attributes.amount]);
    }
    await run('bank-transfer-status');
    assert.equal((await transaction(m, wallet.id, ok.id)).status, 'Pending', 'pending while the bank says so');
    assert.equal((await balanceOf(t, m, wallet.id)).pending.deposit, 10_004);

    adapter.settleMs = 0;
    await run('bank-transfer-status', 2_000);
    assert.equal((await transaction(m, wallet.id, ok.id)).status, 'Cleared');
    const failed = await transaction(m, wallet.id, bad.id);
    assert.deepEqual([failed.status, failed.failureReason], ['Failed', 'R01: insufficient funds']);
    assert.deepEqual(await transfer(ok.id), { status: 'Settled', failure_reason: null, purpose: 'deposit' });
    const balance = await balanceOf(t, m, wallet.id);
    assert.deepEqual([balance.available.deposit, balance.pending.deposit], [5000, 0]);
    // Reported again (another process, a retry): nothing moves twice.
    assert.equal(await run('bank-transfer-status', 600_000), 0);
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 5000);
    await assertLedgerSound(t);
  });

  test('a pull whose answer is lost (timeout) is sent again with the same key; the bank makes it once and it clears once', async () => {
    const { account, wallet } = await linkedWallet(m);
    const d = (await deposit(t, m, wallet.id, 2500, account.id)).body.data;
    adapter.faults.push({ path: '/v1/bank-transfers', method: 'POST', kind: 'delay', ms: 1_000 });
    assert.equal(await run('bank-pulls', 0), 0, 'no answer within PROVIDER_TIMEOUT_MS');
    const unsent = rowsOf<{ provider_ref: string | null }>(
      await t.ctx.db.execute(sql`select provider_ref from transactions where id = ${d.id}`),
    );
    assert.equal(unsent[0]!.provider_ref, null, 'nothing recorded');
    assert.equal(await transfer(d.id), undefined);
    assert.equal(await run('bank-pulls', 0), 1);
    const posts = adapter.callsFor(d.id).filter((c) => c.method === 'POST');
    assert.deepEqual(
      posts.map((c) => [c.idempotencyKey, c.replayed]),
      [
        [d.id, false],
        [d.id, true],
      ],
      'the same key twice; the second answered with the first answer',
    );
    await run('bank-transfer-status');
    assert.equal((await transaction(m, wallet.id, d.id)).status, 'Cleared');
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 2500);
    await assertLedgerSound(t);
  });

  test('a malformed or wrongly signed status answer changes nothing; the next good one does', async () => {
    const { account, wallet } = await linkedWallet(m);
    const d = (await deposit(t, m, wallet.id, 3000, account.id)).body.data;
    await run('bank-pulls', 0);
    for (const kind of ['malformed', 'bad-signature'] as const) {
      adapter.faults.push({ path: `/v1/bank-transfers/${d.id}`, method: 'GET', kind });
      // The status check runs after the lease of the one before.
      assert.equal(await run('bank-transfer-status', 61_000), 0, kind);
      assert.equal(adapter.faults.length, 0, `${kind} answer given`);
      assert.equal((await transaction(m, wallet.id, d.id)).status, 'Pending', kind);
      assert.equal((await transfer(d.id))!.status, 'Pending', kind);
      assert.equal((await balanceOf(t, m, wallet.id)).pending.deposit, 3000, kind);
    }
    await run('bank-transfer-status', 61_000);
    assert.equal((await transaction(m, wallet.id, d.id)).status, 'Cleared');
    await assertLedgerSound(t);
  });

  test('withdrawals: each push keyed withdrawalId:linkedAccountId; a push the bank fails returns its money to the wallet', async () => {
    const { account, wallet } = await fundedWallet(m, 5000);
    const withdraw = (amount: number) =>
      t.request('POST', `/api/v1/wallets/${wallet.id}/withdraw`, {
        as: m,
        body: { data: { type: 'Withdraw', attributes: { amount } } },
      });
    const sent = (await withdraw(1000)).body.data;
    const returned = (await withdraw(1004)).body.data;
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 2996);
    await run('bank-pushes', 0);
    for (const w of [sent, returned]) {
      const key = `${w.id}:${account.id}`;
      assert.equal(adapter.transfers.get(key)?.direction, 'push', key);
      assert.ok(adapter.callsFor(key)[0]!.signed);
    }
    await run('bank-transfer-status');
    assert.equal((await transfer(`${sent.id}:${account.id}`))!.status, 'Settled');
    assert.deepEqual(await transfer(`${returned.id}:${account.id}`), {
      status: 'Failed',
      failure_reason: 'R01: insufficient funds',
      purpose: 'withdrawal',
    });
    assert.equal((await balanceOf(t, m, wallet.id)).available.deposit, 4000, 'the failed push came back');
    await assertLedgerSound(t);
  });

  /**
   * Runs a sending job with the bank's next `n` answers each held back (within
   * PROVIDER_TIMEOUT_MS); returns the most of its pushes the bank was answering at once. Pushes
   * sent one after another never overlap. A run sends every merchant's due pushes, so a test
   * drains the job before it queues its `n`.
   */
  const pushesAtOnce = async (job: string, n: number) => {
    for (let i = 0; i < n; i++)
      adapter.faults.push({ path: '/v1/bank-transfers', method: 'POST', kind: 'delay', ms: 250 });
    adapter.mostAtOnce = 0;
    assert.equal(await run(job, 0), n);
    return adapter.mostAtOnce;
  };
  /** A merchant with a counterparty holding 10,000 cents received by ACH. */
  const fundedCounterparty = async () => {
    const lm = await t.createMerchant();
    const cp = await createCounterparty(t, lm, {
      label: 'Acme Payroll',
      accountNumber: '000987654321',
      accountType: 'Savings',
    });
    assert.equal(cp.status, 201, cp.raw);
    const cpId = cp.body.data.id as string;
    await recordIncomingPayment(t.ctx.db, {
      clientId: lm.clientId,
      counterpartyId: cpId,
      amount: 10_000,
      method: 'ACH',
      externalId: randomUUID(),
      clientAccounts: await clientAccountIds(t.ctx.db, lm.clientId),
      now: t.clock.now(),
    });
    return { lm, cpId };
  };

  test('withdrawals: the pushes of one round are sent together, not one after another', async () => {
    await drain('bank-pushes', 0);
    const { wallet } = await fundedWallet(m, 5000);
    for (let i = 0; i < 3; i++)
      assert.equal(
        (
          await t.request('POST', `/api/v1/wallets/${wallet.id}/withdraw`, {
            as: m,
            body: { data: { type: 'Withdraw', attributes: { amount: 100 } } },
          })
        ).status,
        201,
      );
    assert.equal(await pushesAtOnce('bank-pushes', 3), 3);
  });

  test('counterparty payouts: the pushes of one run are sent together', async () => {
    await drain('counterparty-payouts', 0);
    const { lm, cpId } = await fundedCounterparty();
    for (let i = 0; i < 3; i++) assert.equal((await createPayout(t, lm, cpId, 1000)).status, 201);
    assert.equal(await pushesAtOnce('counterparty-payouts', 3), 3);
  });

  test("counterparty payouts: pushed to the counterparty's account by its numbers, keyed by the payout id; the bank's report completes or returns them", async () => {
    const { lm, cpId } = await fundedCounterparty();
    const ok = await createPayout(t, lm, cpId, 3000);
    const bad = await createPayout(t, lm, cpId, 2004);
    assert.equal(ok.status, 201, ok.raw);
    assert.equal(bad.status, 201, bad.raw);
    assert.deepEqual(await counterpartyBalance(t, lm, cpId), { pending: 0, available: 4996 });
    adapter.settleMs = 3_600_000;
    await run('counterparty-payouts', 0);
    for (const p of [ok.body.data, bad.body.data]) {
      const made = adapter.transfers.get(p.id);
      assert.deepEqual(
        [made?.direction, made?.amount, made?.accountId, made?.bankAccount],
        [
          'push',
          p.attributes.amount,
          undefined,
          {
            routingNumber: '021000021',
            accountNumber: '000987654321',
            accountType: 'savings',
            holderName: 'Acme Payroll',
          },
        ],
      );
      assert.ok(adapter.callsFor(p.id)[0]!.signed, 'a signed call keyed by the payout id');
    }
    const status = async (id: string) =>
      (await t.request('GET', `/api/v1/counterparties/${cpId}/payouts`, { as: lm })).body.data.find(
        (p: { id: string }) => p.id === id,
      ).attributes;
    await run('bank-transfer-status');
    assert.equal((await status(ok.body.data.id)).status, 'Sent', 'Sent while the bank says pending');

    adapter.settleMs = 0;
    await run('bank-transfer-status', 2_000);
    assert.equal((await status(ok.body.data.id)).status, 'Completed');
    const returned = await status(bad.body.data.id);
    assert.deepEqual(
      [returned.status, returned.returnCode, returned.returnReason],
      ['Returned', 'R01', 'insufficient funds'],
    );
    assert.deepEqual(await transfer(bad.body.data.id), {
      status: 'Failed',
      failure_reason: 'R01: insufficient funds',
      purpose: 'payout',
    });
    assert.deepEqual(
      await counterpartyBalance(t, lm, cpId),
      { pending: 0, available: 7000 },
      'the returned payout is back on the available balance',
    );
    const topics = (await t.request('GET', '/api/v1/webhook-events?page[limit]=50', { as: lm })).body.data
      .map((e: { attributes: { topic: string } }) => e.attributes.topic)
      .sort();
    assert.deepEqual(
      topics.filter((x: string) => x.startsWith('CounterpartyPayout')),
      [
        'CounterpartyPayoutCompleted',
        'CounterpartyPayoutCreated',
        'CounterpartyPayoutCreated',
        'CounterpartyPayoutReturned',
        'CounterpartyPayoutSent',
        'CounterpartyPayoutSent',
      ],
    );
    // Reported again (another process, a retry): nothing moves twice.
    assert.equal(await run('bank-transfer-status', 600_000), 0);
    assert.deepEqual(await counterpartyBalance(t, lm, cpId), { pending: 0, available: 7000 });
    await assertLedgerSound(t);
  });

  test("captured payments: the bank part is pulled when due and the payment ends by the bank's report; one without a bank part settles on its own", async () => {
    const { wallet } = await fundedWallet(m, 3000);
    const captured = async (amount: number, applyWalletBalance: boolean) => {
      const intentId = await intentFor(t, m, wallet.id, amount);
      const auth = await t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
        as: m,
        body: {
          data: {
            type: 'AuthorizePaymentIntent',
            attributes: { amount, applyWalletBalance, idempotencyKey: randomUUID() },
          },
        },
      });
      assert.equal(auth.status, 201, auth.raw);
      const id = auth.body.included[0].id as string;
      const cap = await t.request('POST', `/api/v1/payments/${id}/capture`, {
        as: m,
        body: { data: { type: 'CapturePayment', attributes: { amount } } },
      });
      assert.equal(cap.status, 200, cap.raw);
      assert.equal((await payment(m, id)).status, 'Processing');
      return id;
    };
    const bank = await captured(1500, false);
    const failing = await captured(1004, false);
    const walletOnly = await captured(500, true);
    await drain('payment-settlement', 2_000);
    assert.equal((await payment(m, walletOnly)).status, 'Sent', 'nothing to wait for');
    assert.equal((await payment(m, bank)).status, 'Processing', 'waits for the bank');

    adapter.settleMs = 3_600_000;
    await drain('payment-pulls', 0);
    const pulled = adapter.transfers.get(bank);
    assert.deepEqual([pulled?.direction, pulled?.amount], ['pull', 1500], 'the bank part');
    assert.equal(adapter.callsFor(bank)[0]?.idempotencyKey, bank, "keyed by the payment's id");
    await run('payment-settlement', 120_000);
    await run('payment-pulls', 0);
    assert.equal(adapter.callsFor(bank).filter((c) => c.method === 'POST').length, 1, 'pulled once');
    await run('bank-transfer-status');
    assert.equal((await payment(m, bank)).status, 'Processing');

    adapter.settleMs = 0;
    await run('bank-transfer-status', 600_000);
    assert.equal((await payment(m, bank)).status, 'Sent');
    const f = await payment(m, failing);
    assert.deepEqual([f.status, f.failureReason], ['Failed', 'R01: insufficient funds']);
    await assertLedgerSound(t);
  });

  test('card processor: a signed call keyed by the attempt; the adapter declines (402); a lost or wrongly signed answer is 503 and the retry with the same key charges once', async () => {
    const pm = await t.createMerchant({ cardProcessor: { enabled: true, latencyMs: 0 } });
    const { wallet } = await fundedWallet(pm, 10_000);
    const authorize = (intentId: string, amount: number, key = randomUUID()) =>
      t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
        as: pm,
        body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount, idempotencyKey: key } } },
      });
    const approved = await authorize(await intentFor(t, pm, wallet.id, 1000), 1000);
    assert.equal(approved.status, 201, approved.raw);
    const asked = adapter.calls.filter((c) => c.operation === 'authorizeCard').at(-1)!;
    assert.ok(asked.signed);
    assert.deepEqual(adapter.authorizations.get(asked.idempotencyKey!), { amount: 1000, approved: true });
    const declined = await authorize(await intentFor(t, pm, wallet.id, 1202), 1202);
    assert.equal(declined.status, 402, declined.raw);

    for (const fault of [
      { path: '/v1/card-authorizations', kind: 'status', status: 503 },
      { path: '/v1/card-authorizations', kind: 'bad-signature' },
      { path: '/v1/card-authorizations', kind: 'malformed' },
    ] as const) {
      const before = adapter.authorizations.size;
      const intentId = await intentFor(t, pm, wallet.id, 1500);
      const key = randomUUID();
      adapter.faults.push(fault);
      const lost = await authorize(intentId, 1500, key);
      assert.equal(lost.status, 503, `${fault.kind}: ${lost.raw}`);
      assert.equal(errorsOf(lost)[0]!.code, 'ServiceUnavailable');
      const payments = await t.request('GET', `/api/v1/payments?filter[paymentIntentId]=${intentId}`, { as: pm });
      assert.equal(payments.body.data.length, 0, `${fault.kind}: no payment`);
      assert.equal(adapter.authorizations.size, before + 1, 'the adapter charged');
      t.clock.advance(20_000); // the attempt's lease runs out
      const retried = await authorize(intentId, 1500, key);
      assert.equal(retried.status, 201, retried.raw);
      const calls = adapter.calls.filter((c) => c.operation === 'authorizeCard').slice(-2);
      assert.equal(calls[0]!.idempotencyKey, calls[1]!.idempotencyKey, `${fault.kind}: the retry carries the same key`);
      assert.ok(calls[1]!.replayed, 'and gets the first answer');
      assert.equal(adapter.authorizations.size, before + 1, `${fault.kind}: charged once`);
    }
    await assertLedgerSound(t);
  });

  test('card issuing: the single-use card comes from the adapter, keyed by the authorization attempt', async () => {
    const cm = await t.createMerchant({ rails: 'card' });
    const { wallet } = await fundedWallet(cm, 5000);
    const intentId = await intentFor(t, cm, wallet.id, 1200);
    const res = await t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
      as: cm,
      body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 1200, idempotencyKey: randomUUID() } } },
    });
    assert.equal(res.status, 201, res.raw);
    const issued = adapter.calls.filter((c) => c.operation === 'issueCard').at(-1)!;
    assert.ok(issued.signed);
    assert.equal(issued.body?.amount, 1200, 'for exactly the authorized amount');
    assert.ok(adapter.cards.has(issued.idempotencyKey!));
    const card = await t.card.inject({
      method: 'GET',
      url: `/api/v1/payments/${res.body.included[0].id}/card`,
      headers: cm.headers,
    });
    assert.equal(card.statusCode, 200, card.body);
    assert.ok(isLuhnValid(JSON.parse(card.body).data.attributes.number));
  });

  test('removing an account deactivates it with the adapter, keyed by the account id', async () => {
    const user = await createUser(t, m);
    const account = await linkAccount(m, user.id);
    const del = await t.request('DELETE', `/api/v1/users/${user.id}/linked-accounts/${account.id}`, { as: m });
    assert.equal(del.status, 204);
    const call = adapter.calls.find((c) => c.operation === 'deactivateAccount' && c.idempotencyKey === account.id);
    assert.ok(call?.signed && call.status === 200);
  });

  test('an adapter down or refusing is 503 for a request that needs it, and nothing is linked', async () => {
    const user = await createUser(t, m);
    adapter.faults.push({ path: '/v1/bank-linking/accounts', kind: 'status', status: 500 });
    const res = await t.adminRequest('POST', `/admin/v1/clients/${m.clientId}/users/${user.id}/linked-accounts`, {
      body: { data: { type: 'LinkedAccount', attributes: { token: 'tok' } } },
    });
    assert.equal(res.status, 503, res.raw);
    assert.equal(errorsOf(res)[0]!.code, 'ServiceUnavailable');
    const list = await t.request('GET', `/api/v1/users/${user.id}/linked-accounts`, { as: m });
    assert.equal(list.body.data.length, 0);
  });

  test('the adapter refuses a request not signed with the shared secret', async () => {
    const stranger = new AdapterClient({
      port: 'kyc',
      baseUrl: url,
      signingSecret: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
      timeoutMs: 1_000,
    });
    await assert.rejects(
      stranger.call('getKycApplication', { reference: 'x' }),
      (err: ProviderError) => err instanceof ProviderError && /answered 401/.test(err.message),
    );
    assert.deepEqual([adapter.calls.at(-1)!.signed, adapter.calls.at(-1)!.status], [false, 401]);
    await stranger.close();
  });
});
