// @coffer/client against a real Coffer process (PGlite, or PostgreSQL when DATABASE_URL is set):
// typed calls and errors, generated idempotency keys reused across retries, a client timeout
// during a slow authorize followed by a retry that replays the first result, concurrent
// retries, paging, and webhook verification of a real delivery.
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
});
