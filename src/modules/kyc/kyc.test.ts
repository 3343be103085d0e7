// KYC (decisions §5): disclosures, the application, sandbox decisions by e-mail.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { systemClock } from '../../clock.ts';
import { kycApplication } from '../../test/fixtures.ts';
import { createTestApp, createUser, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';

const application = kycApplication;

describe('KYC', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  const status = async (userId: string, as = m) => (await t.request('GET', `/api/v1/users/${userId}/kyc`, { as })).body.data.attributes.status;
  /** The sandbox provider answers 500 ms after submission; move the clock there and run the job. */
  const providerAnswers = async () => {
    t.clock.advance(500);
    await t.ctx.jobs.runOnce('kyc-decisions');
  };

  test('a new user is NotStarted; GET /kyc returns the Kyc resource', async () => {
    const u = await createUser(t, m);
    const res = await t.request('GET', `/api/v1/users/${u.id}/kyc`, { as: m });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.type, 'Kyc');
    assert.equal(res.body.data.id, u.id);
    assert.deepEqual(res.body.data.attributes, {
      status: 'NotStarted',
      disclosuresAcceptedAt: null,
      submittedAt: null,
      decidedAt: null,
      updatedAt: res.body.data.attributes.updatedAt,
    });
    assert.deepEqual(res.body.data.relationships.user.data, { type: 'User', id: u.id });
  });

  test('accepting disclosures is 204, sets DisclosuresAccepted, and is idempotent', async () => {
    const u = await createUser(t, m);
    const first = await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m });
    assert.equal(first.status, 204);
    assert.equal(first.raw, '');
    assert.equal(await status(u.id), 'DisclosuresAccepted');
    const acceptedAt = (await t.request('GET', `/api/v1/users/${u.id}/kyc`, { as: m })).body.data.attributes.disclosuresAcceptedAt;
    t.clock.advance(1000);
    const again = await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m });
    assert.equal(again.status, 204);
    const after = (await t.request('GET', `/api/v1/users/${u.id}/kyc`, { as: m })).body.data.attributes;
    assert.equal(after.status, 'DisclosuresAccepted');
    assert.equal(after.disclosuresAcceptedAt, acceptedAt, 'the first acceptance stands');
  });

  test('an application before disclosures is 400 DisclosuresNotAccepted and changes nothing', async () => {
    const u = await createUser(t, m);
    const res = await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, { as: m, body: application('a@example.com') });
    assert.equal(res.status, 400);
    assert.equal(errorsOf(res)[0]!.code, 'DisclosuresNotAccepted');
    assert.equal(await status(u.id), 'NotStarted');
  });

  for (const [email, decision] of [
    ['ok@example.com', 'Approved'],
    ['someone@highrisk.test', 'AwaitingDocuments'],
    ['someone@declined.test', 'Declined'],
    ['SOMEONE@DECLINED.TEST', 'Declined'],
  ] as const) {
    test(`${email}: 201 Pending, then the sandbox decides ${decision}`, async () => {
      const u = await createUser(t, m);
      await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m });
      const res = await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, { as: m, body: application(email) });
      assert.equal(res.status, 201);
      assert.equal(res.body.data.type, 'Kyc');
      assert.equal(res.body.data.attributes.status, 'Pending');
      assert.equal(res.body.data.attributes.submittedAt, t.clock.now().toISOString());
      // Not yet: the provider answers after its delay.
      await t.ctx.jobs.runOnce('kyc-decisions');
      assert.equal(await status(u.id), 'Pending');
      await providerAnswers();
      const kyc = (await t.request('GET', `/api/v1/users/${u.id}/kyc`, { as: m })).body.data.attributes;
      assert.equal(kyc.status, decision);
      assert.equal(kyc.decidedAt, t.clock.now().toISOString());
    });
  }

  test('the application stores the name and date of birth on the profile', async () => {
    const u = await createUser(t, m);
    await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m });
    await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, { as: m, body: application('n@example.com', { firstName: 'Mary', lastName: 'Somerville' }) });
    const res = await t.request('GET', `/api/v1/users/${u.id}`, { as: m });
    assert.equal(res.body.data.attributes.profile.firstName, 'Mary');
    assert.equal(res.body.data.attributes.profile.lastName, 'Somerville');
  });

  test('a pending, approved or declined user cannot apply again (400 IllegalOperation); AwaitingDocuments can', async () => {
    const u = await createUser(t, m);
    await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m });
    await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, { as: m, body: application('x@highrisk.test') });
    const whilePending = await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, { as: m, body: application('x@example.com') });
    assert.equal(whilePending.status, 400);
    assert.equal(errorsOf(whilePending)[0]!.code, 'IllegalOperation');
    await providerAnswers();
    assert.equal(await status(u.id), 'AwaitingDocuments');
    const resubmit = await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, { as: m, body: application('x@example.com') });
    assert.equal(resubmit.status, 201);
    await providerAnswers();
    assert.equal(await status(u.id), 'Approved');
    const afterApproval = await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, { as: m, body: application('x@example.com') });
    assert.equal(afterApproval.status, 400);
    assert.equal(errorsOf(afterApproval)[0]!.code, 'IllegalOperation');
    // Disclosures again change nothing once decided.
    await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m });
    assert.equal(await status(u.id), 'Approved');
  });

  test('bad applications are 400 with pointers for every field', async () => {
    const u = await createUser(t, m);
    await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m });
    const cases: [Record<string, unknown>, string][] = [
      [{ firstName: '' }, '/data/attributes/firstName'],
      [{ lastName: 7 }, '/data/attributes/lastName'],
      [{ dateOfBirth: '10/12/1990' }, '/data/attributes/dateOfBirth'],
      [{ dateOfBirth: '1990-02-30' }, '/data/attributes/dateOfBirth'],
      [{ dateOfBirth: '2999-01-01' }, '/data/attributes/dateOfBirth'],
      [{ dateOfBirth: '1800-01-01' }, '/data/attributes/dateOfBirth'],
      [{ email: 'nope' }, '/data/attributes/email'],
      [{ address: { street: '1 Main', city: 'X', state: 'Y', postalCode: '1', country: 'USA' } }, '/data/attributes/address/country'],
      [{ address: { street: '1 Main', city: 'X', state: 'Y', country: 'US' } }, '/data/attributes/address/postalCode'],
      [{ address: { street: '1 Main', city: 'X', state: 'Y', postalCode: '1', country: 'US', planet: 'Earth' } }, '/data/attributes/address/planet'],
      [{ ssn: '123' }, '/data/attributes/ssn'],
    ];
    for (const [over, pointer] of cases) {
      const res = await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, { as: m, body: application('v@example.com', over) });
      assert.equal(res.status, 400, JSON.stringify(over));
      assert.deepEqual(errorsOf(res).map((e) => e.source?.pointer), [pointer], JSON.stringify(over));
    }
    assert.equal(await status(u.id), 'DisclosuresAccepted', 'nothing was half-written');
  });

  test("another merchant's user is 404 on every KYC route", async () => {
    const u = await createUser(t, m);
    for (const [method, url, body] of [
      ['POST', `/api/v1/users/${u.id}/disclosures/kyc`, undefined],
      ['POST', `/api/v1/users/${u.id}/kyc/application`, application('x@example.com')],
      ['GET', `/api/v1/users/${u.id}/kyc`, undefined],
    ] as const) {
      const res = await t.request(method, url, { as: other, body });
      assert.equal(res.status, 404, url);
      assert.equal(errorsOf(res)[0]!.code, 'UserNotFound');
    }
    assert.equal(await status(u.id), 'NotStarted');
  });
});

describe('KYC with the background job running', () => {
  test('the sandbox decision arrives within one second of the 201', async () => {
    // Real time for this one: the job runs on its own timer.
    const t = await createTestApp({ clock: systemClock });
    t.ctx.jobs.start();
    try {
      const m = await t.createMerchant();
      const u = await createUser(t, m);
      await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m });
      const started = Date.now();
      const res = await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, { as: m, body: application('fast@example.com') });
      assert.equal(res.status, 201);
      let s = 'Pending';
      while (s === 'Pending' && Date.now() - started < 1000) {
        await new Promise((r) => setTimeout(r, 50));
        s = (await t.request('GET', `/api/v1/users/${u.id}/kyc`, { as: m })).body.data.attributes.status;
      }
      assert.equal(s, 'Approved', `decided after ${Date.now() - started} ms`);
    } finally {
      await t.close();
    }
  });
});
