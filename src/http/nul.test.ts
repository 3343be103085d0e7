// U+0000 and lone surrogates cannot be stored in PostgreSQL text or jsonb: they are refused as
// bad input (400) where they can arrive (src/http/nul.ts), never reaching the database.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { fundedCounterparty, counterpartyBalance } from '../test/counterparties.ts';
import { createTestApp, errorsOf, type Merchant, type TestApp, type Response } from '../test/harness.ts';
import {
  approvedUser,
  balanceOf,
  capturedPayment,
  createWallet,
  fundedWallet,
  intentFor,
  linkAccount,
} from '../test/money.ts';

describe('strings PostgreSQL cannot store', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  describe('the NUL character', () => {
    test('in a body string: 400 ValidationError pointing at it, nothing written', async () => {
      const user = await approvedUser(t, m);
      const account = await linkAccount(t, m, user.id);
      const wallet = await createWallet(t, m, user.id);
      const deposit = (attributes: Record<string, unknown>) =>
        t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, {
          as: m,
          body: {
            data: {
              type: 'OneTimeDeposit',
              attributes: { amount: 1000, linkedAccountId: account.id, idempotencyKey: 'nul-ok', ...attributes },
            },
          },
        });
      for (const [attributes, pointer] of [
        [{ idempotencyKey: 'a\u0000b' }, '/data/attributes/idempotencyKey'],
        [{ risk: { deviceSessionId: 'x\u0000' } }, '/data/attributes/risk/deviceSessionId'],
      ] as const) {
        const res = await deposit(attributes);
        assert.equal(res.status, 400, res.raw);
        const [e] = errorsOf(res);
        assert.equal(e!.code, 'ValidationError');
        assert.equal(e!.source?.pointer, pointer);
      }
      const list = await t.request('GET', `/api/v1/wallets/${wallet.id}/transactions`, { as: m });
      assert.equal(list.body.data.length, 0);
      // A backslash followed by "u0000" is ordinary text.
      const ok = await deposit({ idempotencyKey: 'literal \\u0000' });
      assert.equal(ok.status, 201, ok.raw);

      const named = await t.request('POST', '/api/v1/users', {
        as: m,
        body: { data: { type: 'User', attributes: { phoneNumber: '+15550001234', firstName: 'A\u0000' } } },
      });
      assert.equal(named.status, 400, named.raw);
      assert.equal(errorsOf(named)[0]!.source?.pointer, '/data/attributes/firstName');
    });

    test('in the query string or the path: 400, naming the parameter', async () => {
      const query = await t.request('GET', '/api/v1/users?filter%5BphoneNumber%5D=%2B1555%00', { as: m });
      assert.equal(query.status, 400, query.raw);
      assert.equal(errorsOf(query)[0]!.code, 'BadRequest');
      assert.deepEqual(errorsOf(query)[0]!.source, { parameter: 'filter[phoneNumber]' });
      const path = await t.request('GET', '/api/v1/gifts/ab%00cd', { as: m });
      assert.equal(path.status, 400, path.raw);
      assert.equal(errorsOf(path)[0]!.code, 'BadRequest');
    });
  });

  describe('lone surrogates', () => {
    const LONE = ['\ud800', 'a\udfffb', 'x\ude00\ud83d'];
    const refused = (res: Response, pointer: string) => {
      assert.equal(res.status, 400, res.raw);
      const [e] = errorsOf(res);
      assert.equal(e!.code, 'ValidationError');
      assert.equal(e!.source?.pointer, pointer);
      assert.match(e!.detail, /lone surrogate/);
    };

    test('in a money movement (deposit, withdraw, authorize, refund): 400 ValidationError pointing at it, nothing written', async () => {
      const { wallet, account } = await fundedWallet(t, m, 5000);
      const before = await balanceOf(t, m, wallet.id);
      for (const bad of LONE) {
        refused(
          await t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, {
            as: m,
            body: {
              data: {
                type: 'OneTimeDeposit',
                attributes: { amount: 100, linkedAccountId: account.id, idempotencyKey: bad },
              },
            },
          }),
          '/data/attributes/idempotencyKey',
        );
        refused(
          await t.request('POST', `/api/v1/wallets/${wallet.id}/withdraw`, {
            as: m,
            body: { data: { type: 'Withdraw', attributes: { amount: 100, idempotencyKey: bad } } },
          }),
          '/data/attributes/idempotencyKey',
        );
      }
      const intentId = await intentFor(t, m, wallet.id, 1000);
      const authorize = (attributes: Record<string, unknown>) =>
        t.request('POST', `/api/v1/payment-intents/${intentId}/authorize`, {
          as: m,
          body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 1000, ...attributes } } },
        });
      refused(await authorize({ reference: 'order \ud800' }), '/data/attributes/reference');
      refused(
        await authorize({ meta: { processor: { token: 'ok', nested: ['fine', 'bad \udc00'] } } }),
        '/data/attributes/meta/processor/nested/1',
      );
      const intent = await t.request('GET', `/api/v1/payment-intents/${intentId}`, { as: m });
      assert.equal(intent.body.data.attributes.status, 'Promotable', 'the intent is not authorized');
      assert.deepEqual(await balanceOf(t, m, wallet.id), before, 'no money moved');

      const paymentId = await capturedPayment(t, m, wallet.id, 500);
      const afterCapture = await balanceOf(t, m, wallet.id);
      refused(
        await t.request('POST', `/api/v1/payments/${paymentId}/refund`, {
          as: m,
          body: { data: { type: 'Refund', attributes: { amount: 100, idempotencyKey: 'r\ud800' } } },
        }),
        '/data/attributes/idempotencyKey',
      );
      const payment = await t.request('GET', `/api/v1/payments/${paymentId}`, { as: m });
      assert.equal(payment.body.data.attributes.refundedAmount ?? 0, 0, payment.raw);
      assert.deepEqual(await balanceOf(t, m, wallet.id), afterCapture, 'no money moved');
    });

    test("in free-form members (a transfer's metadata keys, an external transaction's source.id and payload): 400 pointing at it, nothing written", async () => {
      const lm = await t.createMerchant();
      const from = await fundedCounterparty(t, lm, 1000);
      const to = await fundedCounterparty(t, lm);
      const transfer = await t.request('POST', '/api/v1/counterparty-transfers', {
        as: lm,
        body: {
          data: {
            type: 'CounterpartyTransfer',
            attributes: {
              fromCounterpartyId: from,
              toCounterpartyId: to,
              amount: 100,
              idempotencyKey: randomUUID(),
              metadata: { orderId: 'fine', 'key\ud800': 'value' },
            },
          },
        },
      });
      // The key's lone surrogate is shown as U+FFFD, so the error document is well-formed.
      refused(transfer, '/data/attributes/metadata/key\ufffd');
      assert.deepEqual(await counterpartyBalance(t, lm, from), { pending: 0, available: 1000 });

      const external = (attributes: Record<string, unknown>) =>
        t.request('POST', '/api/v1/external-transactions', {
          as: lm,
          body: {
            data: [
              {
                type: 'ExternalTransaction',
                attributes: {
                  source: { id: randomUUID(), createdAt: '2026-05-30T10:00:00.000Z' },
                  payments: [{ method: 'Cash', amount: 1000 }],
                  ...attributes,
                },
              },
            ],
          },
        });
      refused(
        await external({ source: { id: 'src-\udbff', createdAt: '2026-05-30T10:00:00.000Z' } }),
        '/data/0/attributes/source/id',
      );
      refused(await external({ payload: { till: 4, items: ['tea', '\ud800'] } }), '/data/0/attributes/payload/items/1');
      const list = await t.request('GET', '/api/v1/external-transactions', { as: lm });
      assert.equal(list.body.meta.total, 0, list.raw);
    });

    test('a whole surrogate pair, escaped or not, and an escaped backslash before "uD800" are ordinary text', async () => {
      const { wallet, account } = await fundedWallet(t, m, 0);
      const deposit = (rawKey: string) =>
        t.request('POST', `/api/v1/wallets/${wallet.id}/transactions`, {
          as: m,
          rawBody: `{"data":{"type":"OneTimeDeposit","attributes":{"amount":100,"linkedAccountId":"${account.id}","idempotencyKey":"${rawKey}"}}}`,
          headers: { 'content-type': 'application/vnd.api+json' },
        });
      for (const raw of ['pair \\ud83d\\ude00', 'raw \u{1F600}', 'literal \\\\uD800']) {
        const res = await deposit(raw);
        assert.equal(res.status, 201, `${raw}: ${res.raw}`);
      }
      // In a query string a lone surrogate can only be percent-encoded UTF-8, which is invalid: the
      // query decodes it to U+FFFD and a path with it is malformed. Neither reaches the database.
      const query = await t.request('GET', '/api/v1/users?filter%5Bemail%5D=%ED%A0%80', { as: m });
      assert.equal(query.status, 200, query.raw);
      const path = await t.request('GET', '/api/v1/users/%ED%A0%80', { as: m });
      assert.equal(path.status, 400, path.raw);
      assert.equal(errorsOf(path)[0]!.code, 'BadRequest');
    });
  });
});
