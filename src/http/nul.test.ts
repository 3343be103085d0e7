// U+0000 cannot be stored in PostgreSQL text or jsonb: it is refused as bad input (400) in a
// body, a query string or a path, never reaching the database (it was a 500 before).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, errorsOf, type Merchant, type TestApp } from '../test/harness.ts';
import { approvedUser, createWallet, linkAccount } from '../test/money.ts';

describe('the NUL character', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

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
