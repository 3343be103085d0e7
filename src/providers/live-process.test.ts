// Live as a process: it refuses to start without an adapter for every provider and the signing
// secret (exit 78, naming each missing variable), and with them it runs on the adapters alone:
// an applicant the adapter has not decided on stays Pending (the sandbox approved a "Fake Person"
// born 1900-01-01 in 2.5 s), a deposit clears when the bank reports it, a withdrawal is pushed.
// Live needs PostgreSQL: the PostgreSQL pass gives it a fresh database, the PGlite pass a
// throwaway cluster of its own.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import pg from 'pg';
import { PROVIDER_URL_VARIABLES } from '../config.ts';
import { postgresBin, startCluster, type Cluster } from '../test/cluster.ts';
import { dbKind, freshDatabaseUrl, PROVIDER_SIGNING_SECRET, providerEnv } from '../test/harness.ts';
import { startServer } from '../test/process.ts';
import { remoteLedger, remoteMerchant } from '../test/remote.ts';
import { ReferenceAdapter } from './http/reference-adapter.ts';

const ADMIN_TOKEN = 'cft_unyucCW6P8vsUf8lMXlSz-MO9t9ecv5CQNSsUDVnV8eIUgxk';
const SECRETS = {
  COFFER_ENV: 'live',
  ADMIN_TOKEN,
  CARD_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64'),
  WIDGET_SIGNING_KEY: Buffer.alloc(32, 4).toString('base64'),
};
/** None of the provider variables the test process may have. */
const NO_PROVIDERS = Object.fromEntries(
  [...Object.values(PROVIDER_URL_VARIABLES), 'PROVIDER_SIGNING_SECRET'].map((n) => [n, undefined]),
);

const bin = postgresBin();
const noPostgres =
  dbKind === 'pglite' && bin === undefined
    ? 'needs PostgreSQL: the PostgreSQL pass runs it (or install the server binaries)'
    : false;

/** Polls until `check` returns a value, or fails with what it last saw. */
async function eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > until) assert.fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

describe('live as a process, on provider adapters', () => {
  test('refuses to start without an adapter for every provider and the signing secret, naming each (exit 78)', async () => {
    const none = await startServer({ ...SECRETS, ...NO_PROVIDERS, DATABASE_URL: 'postgres://127.0.0.1:9/unused' });
    assert.equal((await none.exited).code, 78, none.stderr());
    for (const name of [...Object.values(PROVIDER_URL_VARIABLES), 'PROVIDER_SIGNING_SECRET'])
      assert.match(none.stderr(), new RegExp(`live requires ${name}`));

    // One adapter is not enough: the other four are named.
    const some = await startServer({
      ...SECRETS,
      ...NO_PROVIDERS,
      DATABASE_URL: 'postgres://127.0.0.1:9/unused',
      KYC_PROVIDER_URL: 'https://kyc.internal',
      PROVIDER_SIGNING_SECRET,
    });
    assert.equal((await some.exited).code, 78, some.stderr());
    assert.doesNotMatch(some.stderr(), /KYC_PROVIDER_URL|PROVIDER_SIGNING_SECRET/);
    for (const name of [
      'BANK_LINKING_PROVIDER_URL',
      'BANK_TRANSFERS_PROVIDER_URL',
      'CARD_ISSUER_PROVIDER_URL',
      'CARD_PROCESSOR_PROVIDER_URL',
    ]) {
      assert.match(some.stderr(), new RegExp(`live requires ${name}`));
    }
  });

  test("runs on the adapters alone: KYC waits for the adapter, a deposit clears by the bank's report, a withdrawal is pushed", {
    skip: noPostgres,
  }, async () => {
    let cluster: Cluster | undefined;
    const databaseUrl = dbKind === 'postgres' ? (await freshDatabaseUrl())! : (cluster = await startCluster(bin!)).url;
    const adapter = new ReferenceAdapter({
      signingSecret: PROVIDER_SIGNING_SECRET,
      settleMs: 300,
      kycDecisionMs: 3_600_000,
    });
    const adapterUrl = await adapter.listen();
    const dir = await mkdtemp(path.join(tmpdir(), 'coffer-live-'));
    const server = await startServer({
      ...SECRETS,
      ...providerEnv(adapterUrl),
      DATABASE_URL: databaseUrl,
      DATA_DIR: dir,
      LOG_LEVEL: 'warn',
    });
    const db = new pg.Client({ connectionString: databaseUrl });
    try {
      await server.waitFor(/Stop with Ctrl-C/);
      await db.connect();
      const { clientId, call } = await remoteMerchant(server, ADMIN_TOKEN);
      const api = server.ports.api;

      // The audit's applicant: the sandbox approved it within 2.5 s.
      const user = (
        await call(api, 'POST', '/users', { data: { type: 'User', attributes: { phoneNumber: '+14155550777' } } })
      ).body.data;
      await call(api, 'POST', `/users/${user.id}/disclosures/kyc`);
      const applied = await call(api, 'POST', `/users/${user.id}/kyc/application`, {
        data: {
          type: 'KycApplication',
          attributes: {
            firstName: 'Fake',
            lastName: 'Person',
            dateOfBirth: '1900-01-01',
            email: 'fake.person@example.com',
            address: { street: '1 Main St', city: 'Springfield', state: 'IL', postalCode: '62701', country: 'US' },
          },
        },
      });
      assert.equal(applied.status, 200);
      const sent = await eventually('the application at the adapter', async () =>
        adapter.calls.find((c) => c.operation === 'submitKycApplication' && c.body?.userId === user.id),
      );
      assert.ok(sent.signed);
      await sleep(3_000);
      const kyc = async () => (await call(api, 'GET', `/users/${user.id}/kyc`)).body.data.attributes.status as string;
      assert.equal(await kyc(), 'Pending', 'not decided by anyone but the adapter');
      assert.ok(
        adapter.callsFor(sent.idempotencyKey!).some((c) => c.operation === 'getKycApplication'),
        'Coffer keeps asking',
      );
      adapter.kycDecisionMs = 0; // the adapter decides (this one approves ordinary addresses)
      await eventually("the adapter's decision", async () => ((await kyc()) === 'Approved' ? true : undefined));

      const linked = await fetch(
        `http://127.0.0.1:${server.ports.admin}/admin/v1/clients/${clientId}/users/${user.id}/linked-accounts`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/vnd.api+json' },
          body: JSON.stringify({ data: { type: 'LinkedAccount', attributes: { token: 'public-token-1' } } }),
        },
      );
      assert.equal(linked.status, 201);
      const account = ((await linked.json()) as { data: { id: string } }).data;
      const wallet = (
        await call(api, 'POST', '/wallets', { data: { type: 'Wallet', attributes: { userId: user.id } } })
      ).body.data;
      const deposit = await call(api, 'POST', `/wallets/${wallet.id}/transactions`, {
        data: {
          type: 'OneTimeDeposit',
          attributes: { amount: 5000, linkedAccountId: account.id, idempotencyKey: 'live-deposit-1' },
        },
      });
      assert.equal(deposit.status, 201);
      assert.equal(deposit.body.data.attributes.status, 'Pending');
      await eventually('the deposit cleared', async () =>
        (await call(api, 'GET', `/wallets/${wallet.id}/transactions/${deposit.body.data.id}`)).body.data.attributes
          .status === 'Cleared'
          ? true
          : undefined,
      );
      assert.equal(adapter.transfers.get(deposit.body.data.id)?.direction, 'pull');

      const withdrawal = await call(api, 'POST', `/wallets/${wallet.id}/withdraw`, {
        data: { type: 'Withdraw', attributes: { amount: 1000 } },
      });
      assert.equal(withdrawal.status, 201);
      const push = `${withdrawal.body.data.id}:${account.id}`;
      await eventually('the push settled', async () =>
        (await db.query('select status from bank_transfers where reference = $1', [push])).rows[0]?.status === 'Settled'
          ? true
          : undefined,
      );
      assert.deepEqual([adapter.transfers.get(push)?.direction, adapter.transfers.get(push)?.amount], ['push', 1000]);
      assert.ok(
        adapter.calls.every((c) => c.signed),
        'every call signed',
      );
      assert.deepEqual(await remoteLedger(server, ADMIN_TOKEN), { sound: true, violations: [] });
    } finally {
      server.kill('SIGTERM');
      assert.equal((await server.exited).code, 0, server.stderr());
      await db.end().catch(() => {});
      await adapter.close();
      await rm(dir, { recursive: true, force: true });
      await cluster?.destroy();
    }
  });
});
