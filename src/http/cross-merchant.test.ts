// One merchant never sees another's data: every operation of the OpenAPI document that names a
// resource in its path is called by merchant B with merchant A's ids (and a body valid for the
// operation, built from its schema) and must answer 404, never touching A's data. A reads the
// same resources, so the ids are real.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createTestApp, errorsOf, type Merchant, type TestApp } from '../test/harness.ts';
import { fundedWallet } from '../test/money.ts';
import { webhookBody } from '../test/fixtures.ts';

const JSONAPI = 'application/vnd.api+json';

/**
 * Where the spec or Accrue's contract declares no 404, another merchant's id gets the answer a
 * missing one gets: the attached profile's reference lookup its 400, a wallet's widget data
 * Accrue's 400 NoWalletFound (version 2: 200 `data: null`), a reward 200 `data: null`; a
 * sweepstakes id is the merchant's own label, so the sample body's unknown customer is what is
 * refused. (`null` as the code: a 200 whose `data` is null. A key may name the method.)
 */
const NOT_FOUND_AS: Record<string, [number, string | null | undefined]> = {
  '/api/v1/users/{userReference}/attached-profile': [400, 'InvalidIdentifier'],
  '/api/v1/sweepstakes/{sweepstakesId}/results': [400, 'UserNotFound'],
  '/api/v1/widgets/wallet/{walletId}': [400, 'NoWalletFound'],
  '/api/v2/widgets/wallet/{walletId}': [200, null],
  'GET /api/v1/rewards/{id}': [200, null],
};

/** A minimal value valid for a JSON schema (the first option of a union, required members only). */
function sample(schema: any, doc: any): unknown {
  if (schema?.$ref) return sample(doc.components.schemas[schema.$ref.split('/').pop()], doc);
  if (schema?.anyOf) return sample(schema.anyOf[0], doc);
  if (schema?.const !== undefined) return schema.const;
  if (schema?.enum) return schema.enum[0];
  switch (schema?.type) {
    case 'object': {
      const keys: string[] = [...(schema.required ?? [])];
      // An update needs at least one member; so does a profile update (phone or e-mail).
      const optional = Object.keys(schema.properties ?? {}).filter((k) => !keys.includes(k));
      if ((schema.minProperties ?? 0) > keys.length || (keys.length === 1 && keys[0] === 'verificationToken'))
        keys.push(...optional.slice(0, 1));
      return Object.fromEntries(keys.map((k) => [k, sample(schema.properties[k], doc)]));
    }
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => sample(schema.items, doc));
    case 'integer':
    case 'number':
      return Math.max(schema.minimum ?? 1, 1);
    case 'boolean':
      return false;
    case 'string':
      if (schema.examples?.length) return schema.examples[0];
      if (schema.format === 'uuid') return randomUUID();
      if (schema.format === 'email') return 'someone@example.com';
      if (schema.format === 'date') return '1990-01-01';
      if (schema.format === 'uri') return 'https://example.com/x';
      if (schema.pattern?.startsWith('^\\+')) return '+14155550199';
      if (schema.pattern === '^[A-Z]{2}$') return 'US';
      if (schema.pattern === '^[0-9]{4}$') return '1234';
      if (schema.pattern === '^[0-9]{9}$') return '021000021';
      if (schema.pattern === '^[0-9]{4,17}$') return '123456789';
      return 'x';
  }
  return undefined;
}

describe('cross-merchant access', () => {
  let t: TestApp;
  let a: Merchant;
  let b: Merchant;
  let doc: any;
  const ids: Record<string, string> = {};

  before(async () => {
    t = await createTestApp();
    a = await t.createMerchant();
    b = await t.createMerchant();
    doc = (await t.api.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    // Merchant A's resources: one of each kind a path can name.
    const { user, account, wallet } = await fundedWallet(t, a, 5_000);
    ids.userId = ids.userReference = ids.userIdentifier = user.id;
    ids.linkedAccountId = account.id;
    ids.walletId = wallet.id;
    ids.transactionId = (
      await t.request('GET', `/api/v1/wallets/${wallet.id}/transactions`, { as: a })
    ).body.data[0].id;
    const withdrawal = await t.request('POST', `/api/v1/wallets/${wallet.id}/withdraw`, {
      as: a,
      body: { data: { type: 'Withdraw', attributes: { amount: 100 } } },
    });
    assert.equal(withdrawal.status, 201, withdrawal.raw);
    ids.withdrawalId = withdrawal.body.data.id;
    // Disabled: its events are recorded, but no delivery is queued for the shared database's workers.
    const webhook = await t.request('POST', '/api/v1/webhooks', { as: a, body: webhookBody({ enabled: false }) });
    ids.webhookId = webhook.body.data.id;
    const events = await t.request('GET', '/api/v1/webhook-events', { as: a });
    ids.eventId = events.body.data[0].id;
    const cpBody = sample(doc.paths['/api/v1/counterparties'].post.requestBody.content[JSONAPI].schema, doc);
    const cp = await t.request('POST', '/api/v1/counterparties', { as: a, body: cpBody });
    assert.equal(cp.status, 201, cp.raw);
    ids.counterpartyId = cp.body.data.id;
    // A's counterparty money and external transactions.
    const deposit = { data: { type: 'SimulateCounterpartyDeposit', attributes: { amount: 1_000 } } };
    assert.equal(
      (
        await t.request('POST', `/api/v1/simulation/counterparties/${cp.body.data.id}/deposits`, {
          as: a,
          body: deposit,
        })
      ).status,
      204,
    );
    const payout = await t.request('POST', `/api/v1/counterparties/${cp.body.data.id}/payouts`, {
      as: a,
      body: { data: { type: 'CreateCounterpartyPayout', attributes: { amount: 100, idempotencyKey: randomUUID() } } },
    });
    ids.payoutId = payout.body.data.id;
    const cp2 = await t.request('POST', '/api/v1/counterparties', { as: a, body: cpBody });
    const transfer = await t.request('POST', '/api/v1/counterparty-transfers', {
      as: a,
      body: {
        data: {
          type: 'CounterpartyTransfer',
          attributes: {
            fromCounterpartyId: cp.body.data.id,
            toCounterpartyId: cp2.body.data.id,
            amount: 100,
            idempotencyKey: randomUUID(),
          },
        },
      },
    });
    ids.counterpartyTransferId = transfer.body.data.id;
    const external = await t.request('POST', '/api/v1/external-transactions', {
      as: a,
      body: {
        data: [
          {
            type: 'ExternalTransaction',
            attributes: {
              source: { id: 'till-1', createdAt: '2026-05-30T10:00:00.000Z', customerId: user.id },
              payments: [{ amount: 500 }],
            },
          },
        ],
      },
    });
    ids.externalTransactionId = external.body.data[0].id;
    const intent = await t.request('POST', '/api/v1/payment-intents', {
      as: a,
      body: { data: { type: 'CreatePaymentIntent', attributes: { amount: 1_000, walletId: wallet.id } } },
    });
    ids.paymentIntentId = intent.body.data.id;
    const auth = await t.request('POST', `/api/v1/payment-intents/${intent.body.data.id}/authorize`, {
      as: a,
      body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 1_000 } } },
    });
    ids.paymentId = auth.body.included[0].id;
    const challenge = await t.request('POST', `/api/v1/users/${user.id}/identity-verification/challenges`, { as: a });
    ids.challengeId = challenge.body.data.id;
    // Rewards are named `{id}` in their paths (Accrue's name).
    const reward = await t.request('POST', '/api/v1/rewards', {
      as: a,
      body: {
        data: { type: 'IssueReward', attributes: { walletId: wallet.id, amount: 100, idempotencyKey: randomUUID() } },
      },
    });
    assert.equal(reward.status, 200, reward.raw);
    ids.id = reward.body.data.id;
    ids.type = 'card';
  });
  after(() => t.close());

  test("every operation on another merchant's resource is 404 (A itself reads them)", async () => {
    const gift = await t.request('POST', '/api/v1/simulation/gifts', {
      as: a,
      body: { data: { type: 'Gift', attributes: { amount: 500 } } },
    });
    const barcode = await t.request('POST', `/api/v1/simulation/wallets/${ids.walletId}/barcodes`, {
      as: a,
      body: { data: { type: 'WalletBarcode', attributes: { usageLimit: 5 } } },
    });
    const failures: string[] = [];
    let checked = 0;
    for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
      if (!path.includes('{')) continue;
      for (const [method, op] of Object.entries<any>(ops)) {
        const lookUpId = path.startsWith('/api/v1/gifts') ? gift.body.data.id : barcode.body.data.attributes.lookUpId;
        const url = path.replace(
          /\{([A-Za-z]+)\}/g,
          (_, name: string) => (name === 'lookUpId' ? lookUpId : ids[name]) ?? randomUUID(),
        );
        const schema = op.requestBody?.content?.[JSONAPI]?.schema;
        const body = schema ? sample(schema, doc) : undefined;
        const res = await t.request(method.toUpperCase(), url, { as: b, ...(body ? { body } : {}) });
        checked++;
        const expected = NOT_FOUND_AS[`${method.toUpperCase()} ${path}`] ?? NOT_FOUND_AS[path] ?? [404, undefined];
        const code = res.body?.errors?.[0]?.code;
        if (res.status !== expected[0] || (expected[1] && code !== expected[1]))
          failures.push(`${method.toUpperCase()} ${path}: ${res.status} ${res.raw.slice(0, 200)}`);
        if (res.status === 200 && res.body?.data !== null)
          failures.push(`${method.toUpperCase()} ${path}: 200 with data ${res.raw.slice(0, 200)}`);
        if (method === 'get') {
          const mine = await t.request('GET', url, { as: a });
          if (mine.status !== 200)
            failures.push(`A cannot read its own ${path}: ${mine.status} ${mine.raw.slice(0, 200)}`);
        }
      }
    }
    assert.ok(checked >= 40, `${checked} operations`);
    assert.deepEqual(failures, []);
    // Nothing B did reached A's data.
    const payment = await t.request('GET', `/api/v1/payments/${ids.paymentId}`, { as: a });
    assert.equal(payment.body.data.attributes.status, 'Created');
    assert.equal((await t.request('GET', `/api/v1/webhooks/${ids.webhookId}`, { as: a })).status, 200);
    const counterparty = await t.request('GET', `/api/v1/counterparties/${ids.counterpartyId}`, { as: a });
    assert.deepEqual(counterparty.body.data.attributes.balance, { pending: 0, available: 800 });
    const payouts = await t.request('GET', `/api/v1/counterparties/${ids.counterpartyId}/payouts`, { as: a });
    assert.equal(payouts.body.data[0].attributes.status, 'Pending');
    assert.equal(
      (await t.request('GET', `/api/v1/rewards/${ids.id}`, { as: a })).body.data.attributes.status,
      'Credited',
    );
    assert.equal(errorsOf(await t.request('GET', `/api/v1/users/${ids.userId}`, { as: b }))[0]!.code, 'UserNotFound');
  });
});
