// Authorize across real processes: a kill -9 in the middle of a slow card-processor
// authorization, and two server processes racing on one intent (PostgreSQL).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { dbKind, freshDatabaseUrl } from '../../test/harness.ts';
import { serverEnv, startServer, type ServerProcess } from '../../test/process.ts';

const ADMIN_TOKEN = 'cft_9tIpgg4oSoMRRlsO5kthv0EKSnAJQO9NWtLWZ0PZmS7rQZHt';

const env = (dir: string, databaseUrl: string | undefined) =>
  serverEnv(dir, databaseUrl, ADMIN_TOKEN, { AUTHORIZATION_LEASE_MARGIN_MS: '1000' });

/** A merchant with a slow card processor, an approved user with 10,000 cents, and an intent. */
async function checkout(server: ServerProcess, latencyMs: number, amount: number) {
  const admin = `http://127.0.0.1:${server.ports.admin}`;
  const created = (await (
    await fetch(`${admin}/admin/v1/clients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/vnd.api+json' },
      body: JSON.stringify({
        data: {
          type: 'Client',
          attributes: { name: 'Crash', settings: { cardProcessor: { enabled: true, latencyMs } } },
        },
      }),
    })
  ).json()) as { data: { id: string; attributes: { secret: string } } };
  const headers = {
    'client-id': created.data.id,
    authorization: `Bearer ${created.data.attributes.secret}`,
    'content-type': 'application/vnd.api+json',
  };
  const call = async (port: number, method: string, p: string, body?: unknown) => {
    const res = await fetch(`http://127.0.0.1:${port}${p}`, {
      method,
      headers,
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const api = server.ports.api;
  const user = (
    await call(api, 'POST', '/api/v1/users', { data: { type: 'User', attributes: { phoneNumber: '+14155551234' } } })
  ).body.data;
  await call(api, 'POST', `/api/v1/users/${user.id}/disclosures/kyc`);
  await call(api, 'POST', `/api/v1/users/${user.id}/kyc/application`, {
    data: {
      type: 'KycApplication',
      attributes: {
        firstName: 'K',
        lastName: 'Nine',
        dateOfBirth: '1980-01-01',
        email: 'k9@example.com',
        address: { street: '1 Main', city: 'X', state: 'Y', postalCode: '1', country: 'US' },
      },
    },
  });
  for (let i = 0; i < 40; i++) {
    if ((await call(api, 'GET', `/api/v1/users/${user.id}/kyc`)).body.data.attributes.status === 'Approved') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const account = (await call(api, 'POST', `/api/v1/simulation/users/${user.id}/linked-accounts`)).body.data;
  const wallet = (
    await call(api, 'POST', '/api/v1/wallets', { data: { type: 'Wallet', attributes: { userId: user.id } } })
  ).body.data;
  const dep = await call(api, 'POST', `/api/v1/wallets/${wallet.id}/transactions`, {
    data: {
      type: 'OneTimeDeposit',
      attributes: { amount: 10_000, linkedAccountId: account.id, idempotencyKey: randomUUID() },
    },
  });
  assert.equal(dep.status, 201, JSON.stringify(dep.body));
  await call(api, 'POST', `/api/v1/simulation/wallets/${wallet.id}/clear-pending/bank`);
  const intent = (
    await call(api, 'POST', '/api/v1/payment-intents', {
      data: { type: 'CreatePaymentIntent', attributes: { amount, walletId: wallet.id } },
    })
  ).body.data;
  return { clientId: created.data.id, call, walletId: wallet.id, intentId: intent.id as string };
}

async function ledgerSound(server: ServerProcess) {
  const res = await fetch(`http://127.0.0.1:${server.ports.admin}/admin/v1/ledger/verify`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  const { sound, violations } = (
    (await res.json()) as { data: { attributes: { sound: boolean; violations: unknown[] } } }
  ).data.attributes;
  return { sound, violations };
}

describe('authorize across processes', () => {
  test('kill -9 during a slow card-processor authorize; after a restart the retry with the same key ends with one payment and a sound ledger', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'coffer-crash-'));
    const databaseUrl = await freshDatabaseUrl();
    let server = await startServer(env(dir, databaseUrl));
    try {
      await server.waitFor(/Stop with Ctrl-C/);
      const c = await checkout(server, 2500, 4000);
      const key = randomUUID();
      const body = { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 4000, idempotencyKey: key } } };
      const inFlight = c
        .call(server.ports.api, 'POST', `/api/v1/payment-intents/${c.intentId}/authorize`, body)
        .catch(() => 'connection lost');
      await new Promise((r) => setTimeout(r, 800)); // the processor is working
      server.kill('SIGKILL');
      await server.exited;
      assert.equal(await inFlight, 'connection lost');

      server = await startServer(env(dir, databaseUrl));
      await server.waitFor(/Stop with Ctrl-C/);
      const statuses: number[] = [];
      let final: { status: number; body: any } | undefined;
      for (let i = 0; i < 60 && !final; i++) {
        const res = await c.call(server.ports.api, 'POST', `/api/v1/payment-intents/${c.intentId}/authorize`, body);
        statuses.push(res.status);
        if (res.status === 201) final = res;
        else {
          assert.equal(res.status, 409, JSON.stringify(res.body));
          await new Promise((r) => setTimeout(r, 250));
        }
      }
      assert.ok(final, `no success after retries: ${statuses.join(',')}`);
      assert.equal(final!.body.data.attributes.status, 'PromotedToPayment');
      const list = await c.call(server.ports.api, 'GET', `/api/v1/payments?filter[paymentIntentId]=${c.intentId}`);
      assert.deepEqual(
        list.body.data.map((p: { attributes: { status: string } }) => p.attributes.status),
        ['Created'],
        'one payment',
      );
      const bal = await c.call(server.ports.api, 'GET', `/api/v1/wallets/${c.walletId}/balance`);
      assert.equal(bal.body.data.attributes.balance.reserved.total, 4000, 'one reservation');
      assert.deepEqual(await ledgerSound(server), { sound: true, violations: [] });
    } finally {
      server.kill('SIGKILL');
      await server.exited;
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('two server processes on one PostgreSQL: retries at the second while the first waits on the processor get 409 AlreadyExists; one charge', {
    skip: dbKind !== 'postgres' && 'needs PostgreSQL (PGlite is one process)',
  }, async () => {
    const databaseUrl = await freshDatabaseUrl();
    const [dirA, dirB] = [
      await mkdtemp(path.join(tmpdir(), 'coffer-a-')),
      await mkdtemp(path.join(tmpdir(), 'coffer-b-')),
    ];
    const a = await startServer(env(dirA, databaseUrl));
    await a.waitFor(/Stop with Ctrl-C/);
    const b = await startServer(env(dirB, databaseUrl));
    try {
      await b.waitFor(/Stop with Ctrl-C/);
      // The processor takes 5 s so that the 20 racing calls, answered by a second process that
      // has served nothing before, all land while the first waits, even on a loaded machine.
      const c = await checkout(a, 5000, 2500);
      const body = { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 2500 } } };
      // Warm the second process (its routes, its pool) so that its answers come within the window.
      for (let i = 0; i < 3; i++) {
        const warm = await Promise.all(
          Array.from({ length: 20 }, () => c.call(b.ports.api, 'GET', `/api/v1/payment-intents/${c.intentId}`)),
        );
        assert.ok(warm.every((r) => r.status === 200));
      }
      const first = c.call(a.ports.api, 'POST', `/api/v1/payment-intents/${c.intentId}/authorize`, body);
      await new Promise((r) => setTimeout(r, 500));
      const racing = await Promise.all(
        Array.from({ length: 20 }, () =>
          c.call(b.ports.api, 'POST', `/api/v1/payment-intents/${c.intentId}/authorize`, body),
        ),
      );
      assert.ok(
        racing.every((r) => r.status === 409 && r.body.errors[0].code === 'AlreadyExists'),
        racing.map((r) => r.status).join(','),
      );
      assert.equal((await first).status, 201);
      const after = await c.call(b.ports.api, 'POST', `/api/v1/payment-intents/${c.intentId}/authorize`, body);
      assert.equal(after.status, 201, 'the second process now returns the existing payment');
      const list = await c.call(b.ports.api, 'GET', `/api/v1/payments?filter[paymentIntentId]=${c.intentId}`);
      assert.equal(list.body.data.length, 1);
      assert.deepEqual(await ledgerSound(b), { sound: true, violations: [] });
    } finally {
      a.kill('SIGTERM');
      b.kill('SIGTERM');
      await Promise.all([a.exited, b.exited]);
      await rm(dirA, { recursive: true, force: true });
      await rm(dirB, { recursive: true, force: true });
    }
  });
});
