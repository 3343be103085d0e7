// @coffer/client against a real Coffer process (PGlite, or PostgreSQL when DATABASE_URL is set):
// typed calls and errors, generated idempotency keys reused across retries, a client timeout
// during a slow authorize followed by a retry that replays the first result, concurrent
// retries, paging, webhook verification of a real delivery, and a helper of every area.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dateLabel } from '../../../src/modules/identity/questions.ts';
import { kycApplication } from '../../../src/test/fixtures.ts';
import { freshDatabaseUrl, LOCAL_RECEIVERS } from '../../../src/test/harness.ts';
import { startServer, type ServerProcess } from '../../../src/test/process.ts';
import {
  CofferError,
  createCoffer,
  unwrap,
  verifyWebhook,
  WebhookVerificationError,
  type Coffer,
} from '../src/index.ts';

const ADMIN_TOKEN = 'cft_ucdSMdwqbKZa2i5dcOVkjNwOEJUFbxKxwbvWCClCGutSwtKF';

/** The CofferError a call fails with (the test fails if it succeeds). */
async function failure(p: Promise<unknown>): Promise<CofferError> {
  const e = await p.then(
    () => assert.fail('expected the call to fail'),
    (err: unknown) => err,
  );
  assert.ok(e instanceof CofferError, String(e));
  return e;
}
const PROCESSOR_MS = 1_500;

describe('@coffer/client against a running server', () => {
  let server: ServerProcess;
  let dir: string;
  let baseUrl: string;
  let merchant: { clientId: string; secret: string };
  let coffer: Coffer;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'coffer-sdk-'));
    server = await startServer({
      DATA_DIR: dir,
      DATABASE_URL: await freshDatabaseUrl(),
      COFFER_ENV: 'sandbox',
      ADMIN_TOKEN,
      CARD_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64'),
      WIDGET_SIGNING_KEY: Buffer.alloc(32, 4).toString('base64'),
      LOG_LEVEL: 'warn',
      ...LOCAL_RECEIVERS, // the webhook test's receiver is on loopback
    });
    await server.waitFor(/Stop with Ctrl-C/);
    baseUrl = `http://127.0.0.1:${server.ports.api}`;
    const res = await fetch(`http://127.0.0.1:${server.ports.admin}/admin/v1/clients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/vnd.api+json' },
      body: JSON.stringify({
        data: {
          type: 'Client',
          attributes: { name: 'SDK shop', settings: { cardProcessor: { enabled: true, latencyMs: PROCESSOR_MS } } },
        },
      }),
    });
    const created = (await res.json()) as { data: { id: string; attributes: { secret: string } } };
    merchant = { clientId: created.data.id, secret: created.data.attributes.secret };
    coffer = createCoffer({ baseUrl, ...merchant, retry: { baseDelayMs: 50, maxDelayMs: 400, maxRetries: 30 } });
  });
  after(async () => {
    server?.kill('SIGTERM');
    await server?.exited;
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** An approved user with a connected account and a wallet holding `amount` cleared cents. */
  async function fundedWallet(c: Coffer, amount: number) {
    const user = await c.users.create({
      phoneNumber: `+1415${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`,
      firstName: 'Ada',
      lastName: 'Lovelace',
    });
    await unwrap(c.api.POST('/api/v1/users/{userId}/disclosures/kyc', { params: { path: { userId: user.id } } }));
    await unwrap(
      c.api.POST('/api/v1/users/{userId}/kyc/application', {
        params: { path: { userId: user.id } },
        body: kycApplication('ada@example.com') as never,
      }),
    );
    for (let i = 0; i < 50; i++) {
      const kyc = await unwrap(c.api.GET('/api/v1/users/{userId}/kyc', { params: { path: { userId: user.id } } }));
      if (kyc.data.attributes.status === 'Approved') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const account = await unwrap(
      c.api.POST('/api/v1/simulation/users/{userId}/linked-accounts', {
        params: { path: { userId: user.id } },
        body: { data: { type: 'LinkedAccount', attributes: {} } },
      }),
    );
    const wallet = await c.wallets.create(user.id);
    const deposit = await c.deposit(wallet.id, { amount, linkedAccountId: account.data.id });
    await unwrap(
      c.api.POST('/api/v1/simulation/wallets/{walletId}/clear-pending/{type}', {
        params: { path: { walletId: wallet.id, type: 'bank' } },
      }),
    );
    return { user, wallet, account: account.data, deposit };
  }

  test('typed calls; errors are CofferError values with the code to branch on', async () => {
    const user = await coffer.users.create({ phoneNumber: '+14155550100', email: 'typed@example.com' });
    assert.equal(user.type, 'User');
    assert.equal(user.attributes.profile.phoneNumber, '+14155550100');
    const again = await failure(coffer.users.create({ phoneNumber: '+14155550100' }));
    assert.equal(again.status, 409);
    assert.equal(again.code, 'UserAlreadyExists');
    const bad = await failure(coffer.users.create({ phoneNumber: '555-0100' }));
    assert.equal(bad.code, 'ValidationError');
    assert.equal(bad.errors[0]!.source?.pointer, '/data/attributes/phoneNumber');
    assert.ok(bad.requestId);
    const wrong = createCoffer({ baseUrl, clientId: merchant.clientId, secret: 'sk_sandbox_wrong' });
    assert.equal((await failure(wrong.users.get(user.id))).code, 'Unauthorized');
  });

  test('a deposit without a key gets one, generated once', async () => {
    const { deposit, wallet } = await fundedWallet(coffer, 5_000);
    assert.equal(deposit.attributes.amount, 5_000);
    assert.equal(deposit.attributes.status, 'Pending');
    // The wallet's activity: the deposit made, then cleared, newest first.
    const activity = await coffer.wallets.activity(wallet.id, { 'filter[kind]': 'deposit' });
    assert.deepEqual(
      activity.data.map((a) => a.attributes.entryKind),
      ['deposit.clear', 'deposit.initiate'],
    );
  });

  test('a client timeout during a slow authorize, then retries with the same key, replay the first result: one payment', async () => {
    const { wallet } = await fundedWallet(coffer, 10_000);
    const intent = await coffer.paymentIntents.create({ amount: 2_500, walletId: wallet.id, reference: 'order-sdk-1' });
    const seen: { attempt: number; reason: string }[] = [];
    // Each attempt gives up after 400 ms; the card processor takes 1.5 s.
    const impatient = createCoffer({
      baseUrl,
      ...merchant,
      retry: {
        authorizeTimeoutMs: 400,
        baseDelayMs: 100,
        maxDelayMs: 300,
        maxRetries: 40,
        onRetry: (e) => seen.push(e),
      },
    });
    const started = Date.now();
    const result = await impatient.paymentIntents.authorize(intent.id, { amount: 2_500, applyWalletBalance: true });
    assert.ok(Date.now() - started >= PROCESSOR_MS - 100, 'the answer came after the processor');
    assert.ok(
      seen.some((s) => /timeout/.test(s.reason)),
      JSON.stringify(seen),
    );
    const payment = result.included!.find((r) => r.type === 'Payment')!;
    assert.equal(result.data.attributes.status, 'PromotedToPayment');
    const payments = await unwrap(
      coffer.api.GET('/api/v1/payments', { params: { query: { 'filter[paymentIntentId]': intent.id } } }),
    );
    assert.equal(payments.meta.total, 1, 'exactly one payment');
    assert.equal(payments.data[0]!.id, payment.id);
    const balance = await coffer.wallets.balance(wallet.id);
    assert.equal(balance.attributes.balance.reserved.total, 2_500, 'reserved once');
  });

  test('concurrent retries of one authorize with one key end in the same payment', async () => {
    const { wallet } = await fundedWallet(coffer, 10_000);
    const intent = await coffer.paymentIntents.create({ amount: 1_000, walletId: wallet.id });
    const key = randomUUID();
    const all = await Promise.all(
      Array.from({ length: 8 }, () =>
        coffer.paymentIntents.authorize(intent.id, { amount: 1_000, idempotencyKey: key }),
      ),
    );
    const ids = new Set(all.map((r) => r.included!.find((x) => x.type === 'Payment')!.id));
    assert.equal(ids.size, 1);
    const payments = await unwrap(
      coffer.api.GET('/api/v1/payments', { params: { query: { 'filter[paymentIntentId]': intent.id } } }),
    );
    assert.equal(payments.meta.total, 1);
    const captured = await coffer.payments.capture([...ids][0]!, 1_000);
    assert.equal(captured.attributes.status, 'Processing');
  });

  test('paginate walks every page of a list', async () => {
    const shop = await fetch(`http://127.0.0.1:${server.ports.admin}/admin/v1/clients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/vnd.api+json' },
      body: JSON.stringify({ data: { type: 'Client', attributes: { name: 'Paging shop' } } }),
    }).then((r) => r.json() as Promise<{ data: { id: string; attributes: { secret: string } } }>);
    const c = createCoffer({ baseUrl, clientId: shop.data.id, secret: shop.data.attributes.secret });
    const made = new Set<string>();
    for (let i = 0; i < 57; i++)
      made.add((await c.users.create({ phoneNumber: `+1212555${String(i).padStart(4, '0')}` })).id);
    const seen: string[] = [];
    for await (const u of c.paginate('/api/v1/users')) seen.push(u.id);
    assert.equal(seen.length, 57);
    assert.deepEqual(new Set(seen), made);
  });

  test('the quickstart (examples/quickstart.ts) takes a sandbox payment with the built package', async () => {
    const script = fileURLToPath(new URL('../../../examples/quickstart.ts', import.meta.url));
    const run = spawnSync(process.execPath, ['--import', 'tsx', script], {
      env: { ...process.env, COFFER_URL: baseUrl, COFFER_CLIENT_ID: merchant.clientId, COFFER_SECRET: merchant.secret },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /kyc\s+Approved/);
    assert.match(run.stdout, /authorized\s+PromotedToPayment/);
    assert.match(run.stdout, /captured\s+Processing, 2500 cents/);
    assert.match(run.stdout, /balance after\s+\{"deposit":2500,/);
  });

  test('verifyWebhook accepts a real delivery and rejects a tampered one', async () => {
    const deliveries: { headers: http.IncomingHttpHeaders; body: string }[] = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        deliveries.push({ headers: req.headers, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
      const hook = await unwrap(
        coffer.api.POST('/api/v1/webhooks', {
          body: { data: { type: 'Webhook', attributes: { name: 'SDK', url, topics: ['ApplicationApproved'] } } },
        }),
      );
      await fundedWallet(coffer, 0 + 100);
      for (let i = 0; i < 100 && deliveries.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
      const d = deliveries[0]!;
      assert.ok(d, 'a delivery arrived');
      const event = verifyWebhook(hook.data.attributes.secret!, d.headers, d.body);
      assert.equal(event.data.attributes.topic, 'ApplicationApproved');
      assert.equal(event.included[0]!.type, 'User');
      assert.throws(
        () => verifyWebhook(hook.data.attributes.secret!, d.headers, d.body.replace('Approved', 'Declined')),
        WebhookVerificationError,
      );
      assert.throws(
        () => verifyWebhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`, d.headers, d.body),
        WebhookVerificationError,
      );
    } finally {
      receiver.close();
    }
  });
  test('a helper of every area, with typed results', async () => {
    const { user, wallet, account } = await fundedWallet(coffer, 10_000);

    // Counterparties, their payouts and the transfers between them.
    const cp = await coffer.counterparties.create({
      accountNumber: '000123456789',
      routingNumber: '021000021',
      accountType: 'Checking',
    });
    assert.equal(cp.type, 'Counterparty');
    assert.equal(cp.attributes.label, 'Checking account ending 6789');
    assert.equal((await coffer.counterparties.get(cp.id)).id, cp.id);
    const renamed = await coffer.counterparties.update(cp.id, { label: 'Payroll' });
    assert.equal(renamed.attributes.label, 'Payroll');
    await coffer.simulations.counterpartyDeposit(cp.id, 3_000);
    const payout = await coffer.counterparties.payouts.create(cp.id, { amount: 1_000 });
    assert.equal(payout.attributes.amount, 1_000);
    const payouts = await coffer.counterparties.payouts.list(cp.id);
    assert.deepEqual(
      payouts.data.map((p) => p.id),
      [payout.id],
    );
    // The payouts job sends it within a second; then the bank completes it.
    for (let i = 0; i < 50; i++) {
      if ((await coffer.counterparties.payouts.list(cp.id)).data[0]!.attributes.status === 'Sent') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await coffer.simulations.completeCounterpartyPayout(cp.id, payout.id);
    assert.equal((await coffer.counterparties.payouts.list(cp.id)).data[0]!.attributes.status, 'Completed');
    const other = await coffer.counterparties.create({
      accountNumber: '9876543210',
      routingNumber: '021000021',
      accountType: 'savings',
    });
    const transfer = await coffer.counterpartyTransfers.create({
      fromCounterpartyId: cp.id,
      toCounterpartyId: other.id,
      amount: 500,
    });
    assert.equal(transfer.attributes.status, 'Completed');
    assert.ok(transfer.attributes.idempotencyKey, 'the client made the key');
    assert.equal((await coffer.counterpartyTransfers.get(transfer.id)).attributes.amount, 500);
    assert.equal((await coffer.counterpartyTransfers.list()).meta.total, 1);
    const empty = await coffer.counterparties.create({
      accountNumber: '1111',
      routingNumber: '021000021',
      accountType: 'Checking',
    });
    await coffer.counterparties.remove(empty.id);
    assert.equal((await failure(coffer.counterparties.get(empty.id))).status, 404);
    assert.deepEqual((await coffer.counterparties.list()).data.map((c) => c.id).sort(), [cp.id, other.id].sort());

    // External transactions.
    const [ext] = await coffer.externalTransactions.add([
      {
        source: { id: 'pos-1', createdAt: new Date().toISOString(), customerId: user.id },
        payments: [{ amount: 1_250, method: 'Cash' }],
      },
    ]);
    assert.equal(ext!.type, 'ExternalTransaction');
    assert.equal((await coffer.externalTransactions.get(ext!.id)).attributes.source.id, 'pos-1');
    assert.equal((await coffer.externalTransactions.list()).meta.total, 1);

    // Gifts.
    const gift = await coffer.simulations.createGift(700);
    const read = await coffer.gifts.get(gift.id);
    assert.deepEqual(read.attributes, { available: 700, originalAmount: 700 });

    // Rewards and sweepstakes.
    const reward = await coffer.rewards.issue({ walletId: wallet.id, amount: 300, message: 'Thanks' });
    assert.equal((await coffer.rewards.get(reward.id))!.attributes.amount, 300);
    assert.ok((await coffer.rewards.list()).data.some((r) => r.id === reward.id));
    await coffer.rewards.cancel(reward.id);
    assert.equal((await coffer.rewards.get(reward.id))!.attributes.status, 'Cancelled');
    await coffer.sweepstakes.addResult('spring', { customer: { id: user.attributes.profile.phoneNumber! } });

    // Payment intents and payments.
    const intent = await coffer.paymentIntents.create({ amount: 400, walletId: wallet.id });
    assert.equal((await coffer.paymentIntents.cancel(intent.id)).attributes.status, 'Canceled');
    assert.ok((await coffer.paymentIntents.list()).meta.total >= 1);
    const direct = await coffer.payments.create({ walletId: wallet.id, amount: 200, reference: 'direct-1' });
    assert.equal((await coffer.payments.update(direct.id, { reference: null })).attributes.reference, null);
    const held = await coffer.paymentIntents.create({ amount: 400, walletId: wallet.id });
    const authorized = await coffer.paymentIntents.authorize(held.id, { amount: 400 });
    const paymentId = authorized.included!.find((r) => r.type === 'Payment')!.id;
    const raised = await coffer.payments.increaseAuthorization(paymentId, { increase: 100 });
    assert.equal(raised.attributes.amount, 500);
    assert.equal((await coffer.payments.cancel(paymentId)).attributes.status, 'Canceled');
    assert.ok((await coffer.payments.list()).meta.total >= 2);

    // Identity verification, then a verified profile update.
    const challenge = await coffer.identityVerification.createChallenge(user.id);
    const right = ['Ada Lovelace', dateLabel('1990-12-10'), account.attributes.accountMask];
    const answers = challenge.attributes.questions.map((q) => ({
      questionId: q.id,
      optionId: q.options.find((o) => right.includes(o.label))!.id,
    }));
    const result = await coffer.identityVerification.submit(user.id, challenge.attributes.challengeId, { answers });
    assert.equal(result.attributes.passed, true);
    const updated = await coffer.identityVerification.updateProfile(user.id, {
      verificationToken: result.attributes.verificationToken!,
      email: 'ada.new@example.com',
    });
    assert.equal(updated.attributes.email, 'ada.new@example.com');

    // Events.
    const events = await coffer.events.list({ 'filter[topic]': 'ApplicationApproved' });
    assert.ok(events.meta.total >= 1);
    const event = await coffer.events.get(events.data[0]!.id);
    assert.equal(event.attributes.topic, 'ApplicationApproved');
  });
});
