// PostgreSQL stopped and started again under load, with the Coffer server left running: while
// the database is away every request is a retryable 503 JSON:API error (never a 500, never a
// dropped connection), the server reconnects by itself, retries with the same idempotency keys
// make each deposit exactly once, every webhook event is delivered once, and the ledger is sound.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { webhookBody } from '../test/fixtures.ts';
import { dbKind, LOCAL_RECEIVERS } from '../test/harness.ts';
import { postgresBin, startCluster } from '../test/cluster.ts';
import { serverEnv, startServer } from '../test/process.ts';
import { startReceiver } from '../test/receiver.ts';
import { remoteApprovedWallet, remoteLedger, remoteMerchant } from '../test/remote.ts';

const ADMIN_TOKEN = 'cft_j9L2hONy66Y9jsXWGlU9TyUCZ19Gz1hRuuNLw_aFxssoJa8h';
const WORKERS = 12;
const bin = postgresBin();
const skip =
  dbKind !== 'postgres'
    ? 'runs in the PostgreSQL pass'
    : bin === undefined && !process.env.CI
      ? 'needs PostgreSQL server binaries (.ci/run installs them)'
      : false;

interface Seen {
  op: 'deposit' | 'balance' | 'event';
  status: number;
  code?: string;
  retryAfter?: string | null;
  at: number;
}

describe('PostgreSQL restarted under load', { skip }, () => {
  test('requests fail with a retryable 503 while it is down; the server recovers alone; retries make each deposit once; events delivered once; ledger sound', async (ctx) => {
    assert.ok(bin, 'PostgreSQL server binaries under /usr/lib/postgresql');
    const cluster = await startCluster(bin);
    const dir = await mkdtemp(path.join(tmpdir(), 'coffer-pgrestart-'));
    const rx = await startReceiver();
    const server = await startServer(
      serverEnv(dir, cluster.url, ADMIN_TOKEN, {
        ...LOCAL_RECEIVERS,
        WEBHOOK_POLL_MS: '50',
        WEBHOOK_RETRY_DELAYS: Array(12).fill('0.2').join(','),
        DATABASE_POOL_SIZE: '8',
      }),
    );
    try {
      await server.waitFor(/Stop with Ctrl-C/);
      const api = server.ports.api;
      const { call } = await remoteMerchant(server, ADMIN_TOKEN, { maxOneTimeDeposit: 10_000_000 });
      const { walletId, accountId } = await remoteApprovedWallet(call, api);
      const hook = (await call(api, 'POST', '/webhooks', webhookBody({ url: rx.url, topics: ['PaymentCreated'] }))).body
        .data;

      const seen: Seen[] = [];
      const depositKeys: string[] = [];
      const deposit = (key: string) =>
        call(api, 'POST', `/wallets/${walletId}/transactions`, {
          data: {
            type: 'OneTimeDeposit',
            attributes: { amount: 100, linkedAccountId: accountId, idempotencyKey: key },
          },
        });
      const record = (op: Seen['op'], r: { status: number; body: any; headers: Headers }) =>
        seen.push({
          op,
          status: r.status,
          code: r.body?.errors?.[0]?.code,
          retryAfter: r.headers.get('retry-after'),
          at: Date.now(),
        });

      let running = true;
      const worker = async (w: number) => {
        for (let i = 0; running; i++) {
          const pick = (w + i) % 3;
          if (pick === 0) {
            const key = randomUUID();
            depositKeys.push(key);
            record('deposit', await deposit(key));
          } else if (pick === 1) {
            record('balance', await call(api, 'GET', `/wallets/${walletId}/balance`));
          } else {
            record('event', await call(api, 'POST', `/webhooks/${hook.id}/test`));
          }
        }
      };
      const load = Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));

      await new Promise((r) => setTimeout(r, 1_000));
      const stoppedAt = Date.now();
      await cluster.stop();
      await new Promise((r) => setTimeout(r, 2_000));
      await cluster.start();
      const startedAt = Date.now();
      // Load goes on until the server has answered a run of successes after the restart.
      const deadline = startedAt + 20_000;
      const recovered = () => {
        const after = seen.filter((s) => s.at > startedAt);
        return after.length >= 60 && after.slice(-60).every((s) => s.status < 300);
      };
      while (!recovered() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      running = false;
      await load;

      const during = seen.filter((s) => s.at > stoppedAt && s.at < startedAt);
      const firstOk = seen.find((s) => s.at > startedAt && s.status < 300);
      ctx.diagnostic(
        `requests: ${seen.length}; while down: ${during.length} (${during.filter((s) => s.status === 503).length} were 503); ` +
          `first success ${firstOk ? firstOk.at - startedAt : '-'} ms after PostgreSQL was back`,
      );
      assert.ok(recovered(), 'the server answers successfully again without being restarted');
      assert.equal(server.proc.exitCode, null, 'the server process kept running');
      const statuses = [...new Set(seen.map((s) => s.status))].sort();
      assert.ok(
        statuses.every((s) => [200, 201, 503].includes(s)),
        `only successes and 503s: ${statuses.join(', ')}`,
      );
      const unavailable = seen.filter((s) => s.status === 503);
      assert.ok(unavailable.length > 0, 'some requests met the database down');
      for (const s of unavailable) {
        assert.equal(s.code, 'ServiceUnavailable');
        assert.ok(Number(s.retryAfter) >= 1, 'a 503 says when to retry');
      }

      // Every deposit retried with its key: one transaction per key, whatever the first answer was.
      const retried = await Promise.all(depositKeys.map((k) => deposit(k)));
      assert.deepEqual([...new Set(retried.map((r) => r.status))], [201]);
      assert.equal(new Set(retried.map((r) => r.body.data.id)).size, depositKeys.length);
      const list = await call(api, 'GET', `/wallets/${walletId}/transactions?page[limit]=1`);
      assert.equal(list.body.meta.total, depositKeys.length, 'one deposit per key, none lost or doubled');
      const balance = (await call(api, 'GET', `/wallets/${walletId}/balance`)).body.data.attributes;
      ctx.diagnostic(`deposits: ${depositKeys.length}; balance ${JSON.stringify(balance)}`);

      // Events created before, during (the ones that committed) and after the outage: each once.
      const events = await call(api, 'GET', '/webhook-events?filter[topic]=WebhookTest&page[limit]=1');
      const total = events.body.meta.total as number;
      const waitStart = Date.now();
      await rx.waitFor(total, 60_000);
      ctx.diagnostic(`events: ${total}, all delivered ${Date.now() - waitStart} ms after the load stopped`);
      await new Promise((r) => setTimeout(r, 300));
      const ids = rx.received.map((r) => r.headers['webhook-id']);
      assert.equal(ids.length, total, 'no event delivered twice');
      assert.equal(new Set(ids).size, total);

      assert.deepEqual(await remoteLedger(server, ADMIN_TOKEN), { sound: true, violations: [] });
      assert.doesNotMatch(server.stdout() + server.stderr(), /unhandled error|InternalError/);
    } finally {
      await new Promise((r) => setTimeout(r, 200));
      if (server.proc.exitCode !== null || server.proc.signalCode !== null)
        ctx.diagnostic(`server exited ${server.proc.exitCode}:\n${server.stderr().slice(-4000)}`);
      server.kill('SIGTERM');
      await server.exited;
      await rx.close();
      await cluster.destroy();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
