// Two server processes on one PostgreSQL, connected directly and through PgBouncer in
// transaction mode: deposits, authorizes and captures sent to both at once (with retries of the
// same request crossing between them) charge once, every event is delivered once to a real
// receiver, and the ledger is sound. PGlite is one process by design, so this runs on
// PostgreSQL only.
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dbKind, freshDatabaseUrl, LOCAL_RECEIVERS } from '../test/harness.ts';
import { pgbouncerSkip, startPgBouncer, type Bouncer } from '../test/pgbouncer.ts';
import { serverEnv, startServer, type ServerProcess } from '../test/process.ts';
import { remoteApprovedWallet, remoteLedger, remoteMerchant, type RemoteCall } from '../test/remote.ts';

const ADMIN_TOKEN = 'cft_bFJnqOrL9KH221JUfqs9bg_5W9mVdv8Bn_fURPRsxQdHtqd_';

const PGLITE_SKIP = dbKind === 'pglite' ? 'PostgreSQL only (PGlite is one process)' : false;

describe('two server processes on one PostgreSQL', { skip: PGLITE_SKIP }, () => twoProcesses({ bouncer: false }));

// CI sets REQUIRE_PGBOUNCER so that a missing PgBouncer fails instead of skipping.
describe(
  'two server processes through PgBouncer (transaction pooling, statements unnamed)',
  { skip: PGLITE_SKIP || pgbouncerSkip(Boolean(process.env.REQUIRE_PGBOUNCER)) },
  () => twoProcesses({ bouncer: true }),
);

function twoProcesses(o: { bouncer: boolean }): void {
  let bouncer: Bouncer | undefined;
  const servers: ServerProcess[] = [];
  const dirs: string[] = [];
  let receiver: http.Server;
  const deliveries: { id: string; body: string; signatureOk: boolean }[] = [];
  let remote: RemoteCall;
  let secret = '';

  before(async () => {
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
        const signatureOk = createHmac('sha256', key).update(body).digest('hex') === req.headers['x-service-signature'];
        deliveries.push({ id: String(req.headers['webhook-id']), body, signatureOk });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    let databaseUrl = (await freshDatabaseUrl())!;
    const extra: Record<string, string> = {};
    if (o.bouncer) {
      bouncer = await startPgBouncer(databaseUrl);
      databaseUrl = bouncer.through(databaseUrl);
      extra.DATABASE_PREPARED_STATEMENTS = 'false';
    }
    for (let i = 0; i < 2; i++) {
      const dir = await mkdtemp(path.join(tmpdir(), 'coffer-procs-'));
      dirs.push(dir);
      const s = await startServer(
        serverEnv(dir, databaseUrl, ADMIN_TOKEN, { WEBHOOK_POLL_MS: '50', ...LOCAL_RECEIVERS, ...extra }),
      );
      await s.waitFor(/Stop with Ctrl-C/);
      servers.push(s);
    }
    remote = (await remoteMerchant(servers[0]!, ADMIN_TOKEN)).call;
  });
  after(async () => {
    for (const s of servers) s.kill('SIGTERM');
    await Promise.all(servers.map((s) => s.exited));
    receiver?.close();
    await bouncer?.stop();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  /** Calls process `i` (0 or 1). */
  const call = (i: number, method: string, p: string, body?: unknown) => remote(servers[i]!.ports.api, method, p, body);

  /** A wallet set up on process `i`. */
  const approvedWallet = async (i: number) => {
    const w = await remoteApprovedWallet(remote, servers[i]!.ports.api);
    return { wallet: { id: w.walletId }, account: { id: w.accountId } };
  };

  test('deposits, authorizes and captures across both: each charged once, every event delivered once, the ledger sound', async () => {
    const hook = await call(0, 'POST', '/webhooks', {
      data: {
        type: 'Webhook',
        attributes: {
          name: 'All',
          url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
          topics: ['*'],
        },
      },
    });
    assert.equal(hook.status, 201);
    secret = hook.body.data.attributes.secret;
    const wallets = await Promise.all([approvedWallet(0), approvedWallet(1)]);

    // 20 deposits per wallet; each is sent to both processes at once with the same key.
    const deposits = await Promise.all(
      wallets.flatMap(({ wallet, account }) =>
        Array.from({ length: 20 }, async () => {
          const body = {
            data: {
              type: 'OneTimeDeposit',
              attributes: { amount: 1_000, linkedAccountId: account.id, idempotencyKey: randomUUID() },
            },
          };
          const [x, y] = await Promise.all([
            call(0, 'POST', `/wallets/${wallet.id}/transactions`, body),
            call(1, 'POST', `/wallets/${wallet.id}/transactions`, body),
          ]);
          // One wins; the other replays it or is told it is in flight.
          const ok = [x, y].filter((r) => r.status === 201);
          assert.ok(
            ok.length >= 1 &&
              [x, y].every(
                (r) => r.status === 201 || (r.status === 409 && r.body.errors[0].code === 'IdempotencyKeyInUse'),
              ),
            JSON.stringify([x.status, y.status]),
          );
          if (ok.length === 2) assert.equal(ok[0]!.body.data.id, ok[1]!.body.data.id);
          return ok[0]!.body.data.id as string;
        }),
      ),
    );
    assert.equal(new Set(deposits).size, 40);
    for (const [i, { wallet }] of wallets.entries()) {
      const list = await call(i, 'GET', `/wallets/${wallet.id}/transactions?page[limit]=50`);
      assert.equal(list.body.meta.total, 20, 'one transaction per key');
      assert.equal((await call(1 - i, 'POST', `/simulation/wallets/${wallet.id}/clear-pending/bank`)).status, 204);
    }

    // 10 intents per wallet, each authorized on both processes at once (same key), then captured on the other.
    for (const [w, { wallet }] of wallets.entries()) {
      await Promise.all(
        Array.from({ length: 10 }, async (_, n) => {
          const intent = (
            await call(n % 2, 'POST', '/payment-intents', {
              data: { type: 'CreatePaymentIntent', attributes: { amount: 700, walletId: wallet.id } },
            })
          ).body.data;
          const body = {
            data: { type: 'AuthorizePaymentIntent', attributes: { amount: 700, idempotencyKey: `k-${intent.id}` } },
          };
          const both = await Promise.all([
            call(0, 'POST', `/payment-intents/${intent.id}/authorize`, body),
            call(1, 'POST', `/payment-intents/${intent.id}/authorize`, body),
          ]);
          let winner = both.find((r) => r.status === 201);
          for (let retry = 0; !winner && retry < 20; retry++) {
            await new Promise((r) => setTimeout(r, 50));
            const again = await call(retry % 2, 'POST', `/payment-intents/${intent.id}/authorize`, body);
            if (again.status === 201) winner = again;
          }
          assert.ok(winner, `intent ${intent.id} was authorized (${both.map((r) => r.status)})`);
          const paymentId = winner.body.included[0].id;
          const captured = await call((w + n + 1) % 2, 'POST', `/payments/${paymentId}/capture`, {
            data: { type: 'CapturePayment', attributes: { amount: 700 } },
          });
          assert.equal(captured.status, 200, JSON.stringify(captured.body));
          const payments = await call(0, 'GET', `/payments?filter[paymentIntentId]=${intent.id}`);
          assert.equal(payments.body.meta.total, 1, 'one payment per intent');
        }),
      );
      const balance = await call(w, 'GET', `/wallets/${wallet.id}/balance`);
      assert.equal(balance.body.data.attributes.balance.available.deposit, 20 * 1_000 - 10 * 700);
    }

    assert.deepEqual(await remoteLedger(servers[1]!, ADMIN_TOKEN), { sound: true, violations: [] });

    // Every event reaches the receiver once, signed, whichever process's worker sent it.
    const total = (await call(0, 'GET', '/webhook-events?page[limit]=1')).body.meta.total as number;
    assert.ok(total >= 40 + 2 * 20 + 4, `${total} events`);
    for (let n = 0; n < 200 && new Set(deliveries.map((d) => d.id)).size < total; n++)
      await new Promise((r) => setTimeout(r, 100));
    const ids = deliveries.map((d) => d.id);
    assert.equal(new Set(ids).size, total, 'every event delivered');
    assert.equal(ids.length, total, 'none delivered twice');
    assert.ok(deliveries.every((d) => d.signatureOk));
  });
}
