// GET /metrics on the admin listener (docs/operations.md#metrics): the token, never on the API
// listener, and the counters moving with requests, deposits, authorizes, replays, 409s, 429s,
// webhook attempts, KYC decisions and the scheduled ledger check. The registry is the
// process's, shared by every app of the run: each test compares before and after.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { withRefusal } from '../test/faults.ts';
import { sql } from 'drizzle-orm';
import { TestClock } from '../clock.ts';
import { rowsOf } from '../db/open.ts';
import { createTestApp, type Merchant, type TestApp } from '../test/harness.ts';
import {
  clearPending,
  createWallet,
  deposit,
  fundedWallet,
  intentFor,
  linkAccount,
  approvedUser,
} from '../test/money.ts';

const METRICS_TOKEN = 'cft_KBa1syf9WUlUW4HseaHrSAI_kt4nHTFDSdt2n6RuOC327d0K';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition. */
function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** The sum of the samples of `name` whose labels include `labels`. */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
}

describe('metrics', () => {
  let t: TestApp;
  let m: Merchant;
  const scrape = async (token = METRICS_TOKEN) => {
    const res = await t.admin.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    return parse(res.body);
  };
  before(async () => {
    t = await createTestApp({ env: { METRICS_TOKEN, RATE_LIMIT_PER_MINUTE: '100000000' } });
    m = await t.createMerchant();
  });
  after(() => t.close());

  test('on the admin listener for METRICS_TOKEN or ADMIN_TOKEN only (401 without, 404 on the API listener)', async () => {
    const none = await t.admin.inject({ method: 'GET', url: '/metrics' });
    assert.equal(none.statusCode, 401);
    assert.equal(JSON.parse(none.body).errors[0].code, 'Unauthorized');
    const wrong = await t.admin.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${METRICS_TOKEN.slice(1)}x` },
    });
    assert.equal(wrong.statusCode, 401);
    // The metrics token opens nothing else.
    assert.equal(
      (
        await t.admin.inject({
          method: 'GET',
          url: '/admin/v1/clients',
          headers: { authorization: `Bearer ${METRICS_TOKEN}` },
        })
      ).statusCode,
      401,
    );
    const admin = await t.adminRequest('GET', '/metrics');
    assert.equal(admin.status, 200);
    await scrape();
    for (const headers of [{}, { authorization: `Bearer ${METRICS_TOKEN}` }, m.headers]) {
      assert.equal((await t.api.inject({ method: 'GET', url: '/metrics', headers })).statusCode, 404);
    }
  });

  test('requests by listener, route template (never the ids in the path), method and status, and their latency', async () => {
    const user = (
      await t.request('POST', '/api/v1/users', {
        as: m,
        body: { data: { type: 'User', attributes: { phoneNumber: `+1415${String(Date.now()).slice(-7)}` } } },
      })
    ).body.data;
    const labels = { listener: 'api', route: '/api/v1/users/:userId', method: 'GET' };
    const before = await scrape();
    assert.equal((await t.request('GET', `/api/v1/users/${user.id}`, { as: m })).status, 200);
    assert.equal((await t.request('GET', `/api/v1/users/${randomUUID()}`, { as: m })).status, 404);
    assert.equal((await t.request('GET', `/api/v1/no-such-thing/${randomUUID()}`, { as: m })).status, 404);
    const after = await scrape();
    assert.equal(
      valueOf(after, 'coffer_http_requests_total', { ...labels, status: '200' }) -
        valueOf(before, 'coffer_http_requests_total', { ...labels, status: '200' }),
      1,
    );
    assert.equal(
      valueOf(after, 'coffer_http_requests_total', { ...labels, status: '404' }) -
        valueOf(before, 'coffer_http_requests_total', { ...labels, status: '404' }),
      1,
    );
    const unmatched = { listener: 'api', route: 'unmatched', method: 'GET', status: '404' };
    assert.equal(
      valueOf(after, 'coffer_http_requests_total', unmatched) -
        valueOf(before, 'coffer_http_requests_total', unmatched),
      1,
    );
    assert.equal(
      valueOf(after, 'coffer_http_request_duration_seconds_count', labels) -
        valueOf(before, 'coffer_http_request_duration_seconds_count', labels),
      2,
    );
    // No id reaches a label.
    const ids = new RegExp(`${user.id}|${m.clientId}`);
    for (const s of after)
      for (const v of Object.values(s.labels)) assert.doesNotMatch(v, ids, `${s.name} ${JSON.stringify(s.labels)}`);
    // Statements are timed; the pool's gauges and the event loop's lag are there.
    assert.ok(
      valueOf(after, 'coffer_db_query_duration_seconds_count') >
        valueOf(before, 'coffer_db_query_duration_seconds_count'),
    );
    for (const name of [
      'coffer_db_pool_in_use',
      'coffer_db_pool_waiting',
      'nodejs_eventloop_lag_seconds',
      'coffer_webhook_due_deliveries',
      'coffer_webhook_oldest_undelivered_age_seconds',
    ]) {
      assert.ok(
        after.some((s) => s.name === name),
        name,
      );
    }
  });

  test('a deposit: a committed money movement, a group of its kind, a replay; a reused key is a 409', async () => {
    const before = await scrape();
    const user = await approvedUser(t, m);
    const account = await linkAccount(t, m, user.id);
    const wallet = await createWallet(t, m, user.id);
    const key = randomUUID();
    assert.equal((await deposit(t, m, wallet.id, 1234, account.id, { idempotencyKey: key })).status, 201);
    const replay = await deposit(t, m, wallet.id, 1234, account.id, { idempotencyKey: key });
    assert.equal(replay.status, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal((await deposit(t, m, wallet.id, 999, account.id, { idempotencyKey: key })).status, 409);
    await clearPending(t, m, wallet.id);
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) =>
      valueOf(after, name, labels) - valueOf(before, name, labels);
    assert.equal(delta('coffer_money_movements_total', { kind: 'deposit.initiate', outcome: 'committed' }), 1);
    assert.equal(delta('coffer_money_movements_total', { kind: 'deposit.clear', outcome: 'committed' }), 1);
    // The replay and the reused key are checked in a group too (the key check is the group's first statement).
    assert.equal(delta('coffer_group_commit_size_count', { kind: 'deposit' }), 3);
    assert.equal(delta('coffer_idempotent_replays_total'), 1);
    assert.equal(delta('coffer_idempotency_conflicts_total', { code: 'IdempotencyKeyReused' }), 1);
    assert.ok(delta('coffer_kyc_decisions_total', { status: 'Approved' }) >= 1);
  });

  test('authorizes by outcome: approved, declined (over the balance), requires action (no linked account)', async () => {
    const { wallet } = await fundedWallet(t, m, 5000);
    const authorize = (intentId: string, amount: number) =>
      t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
        as: m,
        body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount, idempotencyKey: randomUUID() } } },
      });
    const unlinked = await createWallet(t, m, (await approvedUser(t, m, 'unlinked@example.com')).id);
    const before = await scrape();
    assert.equal((await authorize(await intentFor(t, m, wallet.id, 3000), 3000)).status, 201);
    assert.equal((await authorize(await intentFor(t, m, wallet.id, 2000), 2001)).status, 402);
    assert.equal((await authorize(await intentFor(t, m, unlinked.id, 2000), 2000)).status, 402);
    const after = await scrape();
    const delta = (outcome: string) =>
      valueOf(after, 'coffer_authorizations_total', { outcome }) -
      valueOf(before, 'coffer_authorizations_total', { outcome });
    assert.deepEqual(
      { approved: delta('approved'), declined: delta('declined'), requires_action: delta('requires_action') },
      { approved: 1, declined: 1, requires_action: 1 },
    );
    assert.equal(
      valueOf(after, 'coffer_money_movements_total', { kind: 'payment.reserve' }) -
        valueOf(before, 'coffer_money_movements_total', { kind: 'payment.reserve' }),
      1,
    );
  });

  test('a withdrawal, a direct payment and an authorization the ledger refuses count as insufficient_funds', async () => {
    const { wallet } = await fundedWallet(t, m, 50_000);
    // Stands in for a concurrent spend that made the plan stale: the ledger's refusal, raised
    // for this amount's rows only.
    const refusal = (table: string) => ({
      table,
      on: 'insert' as const,
      when: 'new.amount = 7777',
      raise: "errcode = '23514', constraint = 'ledger_accounts_non_negative'",
    });
    const before = await scrape();
    const withdrawn = await withRefusal(t, refusal('withdrawals'), () =>
      t.request('POST', `/api/v1/wallets/${wallet.id}/withdraw`, {
        as: m,
        body: { data: { type: 'Withdraw', attributes: { amount: 7777 } } },
      }),
    );
    assert.equal(withdrawn.status, 400, withdrawn.raw);
    const paid = await withRefusal(t, refusal('payments'), () =>
      t.request('POST', '/api/v1/payments', {
        as: m,
        body: { data: { type: 'CreatePayment', attributes: { walletId: wallet.id, amount: 7777 } } },
      }),
    );
    assert.equal(paid.status, 402, paid.raw);
    const intentId = await intentFor(t, m, wallet.id, 7777);
    const authorized = await withRefusal(t, refusal('payments'), () =>
      t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
        as: m,
        body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 7777 } } },
      }),
    );
    assert.equal(authorized.status, 402, authorized.raw);
    const after = await scrape();
    const delta = (kind: string, outcome: string) =>
      valueOf(after, 'coffer_money_movements_total', { kind, outcome }) -
      valueOf(before, 'coffer_money_movements_total', { kind, outcome });
    assert.deepEqual(
      {
        withdraw: delta('withdraw', 'insufficient_funds'),
        direct: delta('payment.direct', 'insufficient_funds'),
        authorize: delta('payment.reserve', 'insufficient_funds'),
      },
      { withdraw: 1, direct: 1, authorize: 1 },
    );
    assert.equal(
      delta('withdraw', 'committed') + delta('payment.direct', 'committed') + delta('payment.reserve', 'committed'),
      0,
    );
  });

  test('rate limit refusals by listener', async () => {
    const limited = await createTestApp({ env: { RATE_LIMIT_PER_MINUTE: '1' } });
    try {
      const before = await scrape();
      const ip = '203.0.113.77';
      const statuses: number[] = [];
      for (let i = 0; i < 2; i++)
        statuses.push(
          (await limited.api.inject({ method: 'GET', url: '/api/v1/users', remoteAddress: ip, headers: m.headers }))
            .statusCode,
        );
      assert.deepEqual(statuses.slice(-1), [429]);
      const after = await scrape();
      assert.equal(
        valueOf(after, 'coffer_rate_limit_refusals_total', { listener: 'api' }) -
          valueOf(before, 'coffer_rate_limit_refusals_total', { listener: 'api' }),
        1,
      );
    } finally {
      await limited.close();
    }
  });

  test('the ledger check: a job of the runner, its result and time in the metrics', async () => {
    const ran = await t.ctx.jobs.runOnce('ledger-check');
    const after = await scrape();
    // This process ran it (the row recorded last), or another test's app did within the interval
    // (the latest by its end).
    const order = ran === 1 ? sql`id desc` : sql`finished_at desc`;
    const [latest] = rowsOf<{ finished_at: Date | string; violations: number }>(
      await t.ctx.db.execute(sql`select finished_at, violations from ledger_checks order by ${order} limit 1`),
    );
    assert.ok(latest);
    assert.equal(valueOf(after, 'coffer_ledger_invariant_check_violations'), latest.violations);
    assert.equal(
      valueOf(after, 'coffer_ledger_invariant_check_timestamp_seconds'),
      new Date(latest.finished_at).getTime() / 1000,
    );
  });

  // Two processes on one database: the check reads the whole ledger, so it runs once per
  // interval for both, and each one's metrics show it.
  test('the ledger check runs once per interval for all processes, and every process shows the latest', async () => {
    // Clocks of their own, later than any other test's, so that only these apps' checks count.
    const start = new Date('2040-01-01T00:00:00Z');
    const [a, b] = [
      await createTestApp({ clock: new TestClock(start), env: { METRICS_TOKEN } }),
      await createTestApp({ clock: new TestClock(start), env: { METRICS_TOKEN } }),
    ];
    const checks = async () =>
      rowsOf<{ n: number }>(
        await t.ctx.db.execute(sql`select count(*)::int as n from ledger_checks where started_at >= ${start}`),
      )[0]!.n;
    const shown = async (app: TestApp) => {
      const res = await app.admin.inject({
        method: 'GET',
        url: '/metrics',
        headers: { authorization: `Bearer ${METRICS_TOKEN}` },
      });
      return valueOf(parse(res.body), 'coffer_ledger_invariant_check_timestamp_seconds');
    };
    try {
      assert.equal(await a.ctx.jobs.runOnce('ledger-check'), 1);
      assert.equal(await checks(), 1);
      const at = await shown(a);
      assert.ok(at >= start.getTime() / 1000, String(at));
      // Within the interval (an hour) the other process does not check again, and shows a's.
      b.clock.advance(59 * 60_000);
      assert.equal(await b.ctx.jobs.runOnce('ledger-check'), 0);
      assert.equal(await checks(), 1);
      assert.equal(await shown(b), at);
      // An interval after it finished, the first to look checks.
      b.clock.advance(2 * 60_000);
      assert.equal(await b.ctx.jobs.runOnce('ledger-check'), 1);
      assert.equal(await checks(), 2);
      assert.ok((await shown(b)) > at);
      // While another process holds the check's lock, a process that finds it due leaves it.
      // (PGlite is one connection: a second transaction waits for the first.)
      a.clock.advance(3 * 3_600_000);
      if (t.ctx.database.kind === 'postgres') {
        await t.ctx.db.transaction(async (tx) => {
          await tx.execute(sql`select pg_advisory_xact_lock(hashtext('coffer:ledger-check'))`);
          assert.equal(await a.ctx.jobs.runOnce('ledger-check'), 0);
        });
        assert.equal(await checks(), 2);
      }
      // The admin API's check runs whenever asked, and is recorded like the job's.
      const res = await a.adminRequest('GET', '/admin/v1/ledger/verify');
      assert.equal(res.status, 200);
      assert.equal(await checks(), 3);
      // A process whose clock is more than an interval behind the latest check (years, here)
      // does not take it for a recent one: it checks.
      const behind = await createTestApp({ clock: new TestClock(new Date('2030-01-01T00:00:00Z')) });
      try {
        assert.equal(await behind.ctx.jobs.runOnce('ledger-check'), 1);
      } finally {
        await behind.close();
      }
    } finally {
      await t.ctx.db.execute(
        sql`delete from ledger_checks where started_at >= ${start} or started_at = '2030-01-01T00:00:00Z'`,
      );
      await a.close();
      await b.close();
    }
  });
});
