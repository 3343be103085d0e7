// Retention (EVENT_RETENTION_DAYS): events past it leave with their deliveries and attempts;
// younger ones, and old ones with a delivery still pending, stay.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { kycApplication as application, webhookBody } from '../../test/fixtures.ts';
import { createTestApp, createUser, LOCAL_RECEIVERS, type Merchant, type TestApp } from '../../test/harness.ts';

const DAY = 86_400_000;

describe('event retention', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { ...LOCAL_RECEIVERS, EVENT_RETENTION_DAYS: '10', WEBHOOK_RETRY_DELAYS: '60,60' } });
  });
  after(() => t.close());

  /** A user through KYC: the decision's events. */
  async function someEvents(as: Merchant): Promise<void> {
    const u = await createUser(t, as);
    await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as });
    assert.equal((await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, { as, body: application(`r${Date.now()}@example.com`) })).status, 200);
    t.clock.advance(500);
    await t.ctx.jobs.runOnce('kyc-decisions');
  }
  const eventIds = async (as: Merchant) => ((await t.request('GET', '/api/v1/webhook-events?page[limit]=100', { as })).body.data as { id: string }[]).map((e) => e.id);
  const purge = () => t.ctx.jobs.runOnce('event-retention');

  test('events past the retention go with their deliveries and attempts; younger ones and those still being delivered stay', async () => {
    const quiet = await t.createMerchant(); // no webhook: events only
    const busy = await t.createMerchant(); // a receiver that never answers: deliveries pending, attempts made
    const hook = await t.request('POST', '/api/v1/webhooks', { as: busy, body: webhookBody({ url: 'http://127.0.0.1:9/closed' }) });
    assert.equal(hook.status, 201, hook.raw);
    await someEvents(quiet);
    await someEvents(busy);
    await t.ctx.webhooks.runOnce(); // one failed attempt each; the deliveries stay pending
    const old = { quiet: await eventIds(quiet), busy: await eventIds(busy) };
    assert.ok(old.quiet.length > 0 && old.busy.length > 0);

    t.clock.advance(9 * DAY);
    await purge();
    assert.deepEqual(await eventIds(quiet), old.quiet, 'within the retention, nothing goes');

    t.clock.advance(2 * DAY);
    await someEvents(quiet); // younger than the retention
    const young = (await eventIds(quiet)).filter((id) => !old.quiet.includes(id));
    assert.ok(young.length > 0);
    await purge();
    assert.deepEqual(await eventIds(quiet), young, 'the old events went, the young ones stayed');
    const gone = await t.request('GET', `/api/v1/webhook-events/${old.quiet[0]}`, { as: quiet });
    assert.equal(gone.status, 404);
    assert.deepEqual((await eventIds(busy)).sort(), [...old.busy].sort(), 'events with a delivery still pending stay');

    // Emptying the url cancels the pending deliveries; then the old events go, attempts and all.
    assert.equal((await t.request('PATCH', `/api/v1/webhooks/${hook.body.data.id}`, { as: busy, body: { data: { type: 'Webhook', attributes: { url: '' } } } })).status, 200);
    await purge();
    assert.deepEqual(await eventIds(busy), []);
  });

  test('a retention no longer than the webhook retry schedule is refused at start', async () => {
    await assert.rejects(createTestApp({ env: { EVENT_RETENTION_DAYS: '2' } }), /EVENT_RETENTION_DAYS must be longer than the webhook retry schedule \(3 days\)/);
  });
});
