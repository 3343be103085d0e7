// A webhook event's resource (Accrue's WebhookEvent): `userId` and `walletId` appear only when
// the event concerns a user or a wallet; absent otherwise, never null. Both lists and single
// reads go through the same rendering.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type Merchant, type TestApp } from '../../test/harness.ts';
import { fundedWallet } from '../../test/money.ts';

describe('webhook event resources', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  test('userId and walletId are present when the event concerns them and absent otherwise', async () => {
    const { user, wallet } = await fundedWallet(t, m, 1_000);
    const list = await t.request('GET', '/api/v1/webhook-events?page[limit]=50', { as: m });
    assert.equal(list.status, 200, list.raw);
    const events = list.body.data as { id: string; attributes: Record<string, unknown> }[];
    const kyc = events.find((e) => e.attributes.topic === 'KycApproved');
    const cleared = events.find((e) => e.attributes.topic === 'TransactionCleared');
    assert.ok(kyc && cleared, JSON.stringify(events.map((e) => e.attributes.topic)));
    assert.equal(kyc.attributes.userId, user.id);
    assert.ok(!('walletId' in kyc.attributes), 'an event about a user alone has no walletId');
    assert.equal(cleared.attributes.walletId, wallet.id);
    assert.equal(cleared.attributes.userId, user.id);
    const one = await t.request('GET', `/api/v1/webhook-events/${kyc.id}`, { as: m });
    assert.equal(one.status, 200, one.raw);
    assert.ok(!('walletId' in one.body.data.attributes), 'nor in a single read');
    assert.equal(one.body.data.attributes.updatedAt, one.body.data.attributes.createdAt);
  });
});
