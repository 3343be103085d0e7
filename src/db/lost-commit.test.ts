// Group commit through HTTP when a COMMIT loses its answer: Coffer reaches PostgreSQL through a
// TCP proxy (chaos/proxy.ts) that drops the connection right after Coffer sends COMMIT, while
// a group of concurrent deposits, authorizes or captures is written. Whether the group
// committed is unknown to Coffer, so no member runs again: each request is answered a
// retryable 503, and a retry with the same idempotency key replays what was committed (or, if
// the COMMIT never reached PostgreSQL, makes it once). Exactly one effect per request; the
// ledger is sound. pg-transaction.test.ts tests the same below HTTP.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { FaultProxy } from '../../chaos/proxy.ts';
import {
  createTestApp,
  dbKind,
  errorsOf,
  freshDatabaseUrl,
  type Merchant,
  type Response,
  type TestApp,
} from '../test/harness.ts';
import { assertLedgerSound, balanceOf, depositBody, fundedWallet, intentFor, paymentXmins } from '../test/money.ts';
import { openDatabase, rowsOf, type Database } from './open.ts';

const N = 6;

describe('a group whose COMMIT loses its answer, through HTTP', {
  skip: dbKind !== 'postgres' ? 'node-postgres through a TCP proxy: runs in the PostgreSQL pass' : false,
}, () => {
  let proxy: FaultProxy;
  let database: Database;
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    const url = new URL((await freshDatabaseUrl())!);
    proxy = new FaultProxy({ host: url.hostname, port: Number(url.port || 5432) });
    await proxy.start();
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    database = await openDatabase({ databaseUrl: url.toString(), dataDir: '', poolSize: 10 });
    t = await createTestApp({ database });
    m = await t.createMerchant({ maxOneTimeDeposit: 10_000_000 });
  });
  after(async () => {
    await t.close();
    await database.close();
    await proxy.close();
  });

  /** Runs `requests` together with every COMMIT cut (after PostgreSQL got it, or before); returns the answers and how many COMMITs were cut. */
  async function withCommitsLost(
    delivered: boolean,
    requests: () => Promise<Response>[],
  ): Promise<{ answers: Response[]; cut: number }> {
    const before = proxy.commitsCut.delivered + proxy.commitsCut.undelivered;
    proxy.loseCommits({ probability: 1, delivered });
    try {
      const answers = await Promise.all(requests());
      // The answers came before PostgreSQL's to the COMMIT: the test reads what was written
      // once it has answered (a retry would wait for the transaction's locks instead).
      await proxy.settled();
      return { answers, cut: proxy.commitsCut.delivered + proxy.commitsCut.undelivered - before };
    } finally {
      proxy.loseCommits(undefined);
    }
  }

  const assertAll503 = (answers: Response[]) => {
    for (const r of answers) {
      assert.equal(r.status, 503, r.raw);
      assert.equal(errorsOf(r)[0]!.code, 'ServiceUnavailable');
      assert.equal(r.headers['retry-after'], '1');
    }
  };

  test('deposits: a group that committed is answered 503 to each; retries with the keys replay it, one deposit each', async () => {
    const { wallet, account } = await fundedWallet(t, m, 0);
    const keys = Array.from({ length: N }, () => randomUUID());
    const amounts = keys.map((_, n) => 1_000 + n);
    const send = (n: number) =>
      t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, {
        as: m,
        body: depositBody(amounts[n]!, account.id, { idempotencyKey: keys[n] }),
      });
    const { answers, cut } = await withCommitsLost(true, () => keys.map((_, n) => send(n)));
    assertAll503(answers);
    assert.ok(cut >= 1 && cut < N, `the deposits were written in groups: ${cut} COMMITs cut for ${N} deposits`);

    const retries = await Promise.all(keys.map((_, n) => send(n)));
    for (const r of retries) {
      assert.equal(r.status, 201, r.raw);
      assert.equal(r.headers['idempotent-replayed'], 'true', 'the committed deposit is replayed, not made again');
    }
    const ids = retries.map((r) => r.body.data.id as string);
    const rows = rowsOf<{ id: string; amount: string; xmin: string }>(
      await t.ctx.db.execute(
        sql`select id, amount::text as amount, xmin::text as xmin from transactions where wallet_id = ${wallet.id}`,
      ),
    );
    assert.deepEqual(rows.map((r) => r.id).sort(), [...ids].sort(), 'one deposit per key');
    assert.deepEqual(rows.map((r) => Number(r.amount)).sort(), [...amounts].sort());
    assert.ok(new Set(rows.map((r) => r.xmin)).size <= cut, 'each lost group committed as one transaction');
    assert.equal(
      (await balanceOf(t, m, wallet.id)).pending.deposit,
      amounts.reduce((a, b) => a + b, 0),
    );
    await assertLedgerSound(t);
  });

  test('authorizes: a group whose COMMIT never reached PostgreSQL is answered 503 to each; retries with the keys make each payment once', async () => {
    const { wallet } = await fundedWallet(t, m, 100_000);
    const intents = await Promise.all(Array.from({ length: N }, () => intentFor(t, m, wallet.id, 1_500)));
    const keys = intents.map(() => randomUUID());
    const send = (n: number) =>
      t.request('POST', `/api/v1/payment-intents/${intents[n]}/authorize`, {
        as: m,
        body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 1_500, idempotencyKey: keys[n] } } },
      });
    const { answers, cut } = await withCommitsLost(false, () => intents.map((_, n) => send(n)));
    assertAll503(answers);
    assert.ok(cut >= 1 && cut < N, `the authorizes were written in groups: ${cut} COMMITs cut for ${N} authorizes`);
    assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, 0, 'the group rolled back');

    const retries = await Promise.all(intents.map((_, n) => send(n)));
    for (const r of retries) {
      assert.equal(r.status, 201, r.raw);
      assert.equal(r.headers['idempotent-replayed'], undefined, 'nothing was committed: the retry makes the payment');
    }
    const rows = rowsOf<{ intent_id: string }>(
      await t.ctx.db.execute(sql`select intent_id from payments where wallet_id = ${wallet.id}`),
    );
    assert.deepEqual(rows.map((r) => r.intent_id).sort(), [...intents].sort(), 'one payment per intent');
    assert.equal((await balanceOf(t, m, wallet.id)).reserved.total, N * 1_500);
    await assertLedgerSound(t);
  });

  test('captures: a group that committed is answered 503 to each, never refused as already captured; each payment captured once', async () => {
    const { wallet } = await fundedWallet(t, m, 100_000);
    const payments: string[] = [];
    for (let n = 0; n < N; n++) {
      const intentId = await intentFor(t, m, wallet.id, 2_000);
      const res = await t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
        as: m,
        body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 2_000 } } },
      });
      assert.equal(res.status, 201, res.raw);
      payments.push(res.body.included[0].id);
    }
    const capture = (id: string) =>
      t.request('POST', `/api/v1/payments/${id}/capture`, {
        as: m,
        body: { data: { type: 'CapturePayment', attributes: { amount: 1_200 } } },
      });
    const { answers, cut } = await withCommitsLost(true, () => payments.map(capture));
    // Running the captures again after the group committed would refuse them (400
    // IllegalOperation: no longer Created) although they happened.
    assertAll503(answers);
    assert.equal(cut, 1, 'the captures were one group');

    const rows = await paymentXmins(t, payments);
    assert.equal(new Set(rows.map((r) => r.xmin)).size, 1, 'the lost group committed as one transaction');
    for (const id of payments) {
      const p = await t.request('GET', `/api/v1/payments/${id}`, { as: m });
      assert.equal(p.status, 200, p.raw);
      assert.deepEqual([p.body.data.attributes.status, p.body.data.attributes.capturedAmount], ['Processing', 1_200]);
      // The capture carries no key: asked again, it is the payment's state that answers.
      const again = await capture(id);
      assert.equal(again.status, 402, again.raw);
      assert.equal(errorsOf(again)[0]!.code, 'IllegalOperation');
    }
    const entries = rowsOf<{ n: number }>(
      await t.ctx.db.execute(
        sql`select count(*)::int as n from ledger_entries where kind = 'payment.capture' and ref_type = 'payment' and ref_id in ${payments}`,
      ),
    );
    assert.equal(entries[0]!.n, N, 'one capture entry per payment');
    const b = await balanceOf(t, m, wallet.id);
    assert.equal(b.reserved.total, 0);
    assert.equal(b.available.deposit, 100_000 - N * 1_200);
    await assertLedgerSound(t);
  });
});
