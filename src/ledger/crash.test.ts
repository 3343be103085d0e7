// kill -9 in the middle of money movement, then a restart: every request either completed or
// left nothing, retries with the same key replay or finish the work, and the ledger is sound.
// (Authorize has its own crash test in payment-intents/crash.test.ts.)
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { freshDatabaseUrl } from '../test/harness.ts';
import { serverEnv, startServer, type ServerProcess } from '../test/process.ts';
import { remoteApprovedWallet, remoteLedger, remoteMerchant } from '../test/remote.ts';

const ADMIN_TOKEN = 'cft_DnZMOc8uXzjJDQvO2q7rMNqGyiDLIEbAWgw4Vn-0a4GUSNmA';
const N = 40;

const env = (dir: string, databaseUrl: string | undefined) => serverEnv(dir, databaseUrl, ADMIN_TOKEN);

async function restart(server: ServerProcess, dir: string, databaseUrl: string | undefined): Promise<ServerProcess> {
  server.kill('SIGKILL');
  await server.exited;
  const next = await startServer(env(dir, databaseUrl));
  await next.waitFor(/Stop with Ctrl-C/);
  return next;
}

describe('kill -9 during money movement', () => {
  test(`${N} deposits and then ${N} captures in flight when the server is killed: after a restart and retries, each happened once`, async (ctx) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'coffer-kill-'));
    const databaseUrl = await freshDatabaseUrl();
    let server = await startServer(env(dir, databaseUrl));
    try {
      await server.waitFor(/Stop with Ctrl-C/);
      const { call } = await remoteMerchant(server, ADMIN_TOKEN, { maxOneTimeDeposit: 10_000_000 });
      const { walletId, accountId } = await remoteApprovedWallet(call, server.ports.api);

      // Deposits: all in flight at once, then the process dies.
      const keys = Array.from({ length: N }, () => randomUUID());
      const deposit = (port: number, key: string) =>
        call(port, 'POST', `/wallets/${walletId}/transactions`, {
          data: {
            type: 'OneTimeDeposit',
            attributes: { amount: 1_000, linkedAccountId: accountId, idempotencyKey: key },
          },
        });
      const inFlight = keys.map((k) => deposit(server.ports.api, k).catch(() => ({ status: 0, body: undefined })));
      await new Promise((r) => setTimeout(r, 40));
      server = await restart(server, dir, databaseUrl);
      const before = await Promise.all(inFlight);
      assert.ok(
        before.some((r) => r.status === 0) || before.every((r) => r.status === 201),
        'the kill landed during the burst or after it',
      );
      ctx.diagnostic(`deposits answered before the kill: ${before.filter((r) => r.status === 201).length} of ${N}`);
      // Retries with the same keys: each answers 201, a replay where the first had committed.
      const retried = await Promise.all(keys.map((k) => deposit(server.ports.api, k)));
      assert.deepEqual(
        [...new Set(retried.map((r) => r.status))],
        [201],
        JSON.stringify(retried.find((r) => r.status !== 201)?.body),
      );
      for (const [i, r] of before.entries())
        if (r.status === 201)
          assert.equal(retried[i]!.body.data.id, r.body.data.id, 'a committed deposit is replayed, not repeated');
      const list = await call(server.ports.api, 'GET', `/wallets/${walletId}/transactions?page[limit]=50`);
      assert.equal(list.body.meta.total, N, 'one transaction per key');
      assert.equal(
        (await call(server.ports.api, 'POST', `/simulation/wallets/${walletId}/clear-pending/bank`)).status,
        204,
      );
      assert.deepEqual(await remoteLedger(server, ADMIN_TOKEN), { sound: true, violations: [] });

      // Captures: N authorized payments, all captured at once, then the process dies.
      const payments: string[] = [];
      for (let i = 0; i < N; i++) {
        const intent = (
          await call(server.ports.api, 'POST', '/payment-intents', {
            data: { type: 'CreatePaymentIntent', attributes: { amount: 300, walletId } },
          })
        ).body.data;
        const auth = await call(server.ports.api, 'POST', `/payment-intents/${intent.id}/authorize`, {
          data: { type: 'AuthorizePaymentIntent', attributes: { amount: 300, idempotencyKey: randomUUID() } },
        });
        assert.equal(auth.status, 201, JSON.stringify(auth.body));
        payments.push(auth.body.included[0].id);
      }
      const capture = (port: number, id: string) =>
        call(port, 'POST', `/payments/${id}/capture`, {
          data: { type: 'CapturePayment', attributes: { amount: 300 } },
        });
      const capturing = payments.map((id) =>
        capture(server.ports.api, id).catch(() => ({ status: 0, body: undefined })),
      );
      await new Promise((r) => setTimeout(r, 40));
      server = await restart(server, dir, databaseUrl);
      const captured = await Promise.all(capturing);
      ctx.diagnostic(`captures answered before the kill: ${captured.filter((r) => r.status === 200).length} of ${N}`);
      // A capture either happened (Processing: capturing again is refused) or left the payment Created.
      for (const id of payments) {
        const p = (await call(server.ports.api, 'GET', `/payments/${id}`)).body.data.attributes;
        assert.ok(['Created', 'Processing', 'Sent'].includes(p.status), p.status);
        if (p.status === 'Created') {
          assert.equal(p.capturedAmount, 0, 'nothing half-captured');
          assert.equal((await capture(server.ports.api, id)).status, 200);
        } else {
          assert.equal(p.capturedAmount, 300);
          assert.equal((await capture(server.ports.api, id)).body.errors[0].code, 'IllegalOperation', 'captured once');
        }
      }
      const balance = (await call(server.ports.api, 'GET', `/wallets/${walletId}/balance`)).body.data.attributes
        .balance;
      assert.equal(balance.available.deposit, N * 1_000 - N * 300);
      assert.equal(balance.reserved.total, 0);
      assert.deepEqual(await remoteLedger(server, ADMIN_TOKEN), { sound: true, violations: [] });
    } finally {
      server.kill('SIGKILL');
      await server.exited;
      await rm(dir, { recursive: true, force: true });
    }
  });
});
