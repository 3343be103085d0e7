// KYC (docs/identity.md#kyc-in-detail, docs/adr/0001-spec-then-accrue.md): disclosures, applications in Coffer's and
// Accrue's shapes, the sandbox's decisions by e-mail, document verification (link, the sandbox's
// page, completion), the events of every change, Accrue's Kyc schema, merchant scoping.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { sql } from 'drizzle-orm';
import { systemClock } from '../../clock.ts';
import { rowsOf } from '../../db/open.ts';
import { accrueKycApplication, kycApplication } from '../../test/fixtures.ts';
import { createTestApp, createUser, errorsOf, type Merchant, type TestApp } from '../../test/harness.ts';

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

// Accrue's published schemas of the resources these routes answer (components Kyc and
// DocumentVerificationLink of its OpenAPI document), for the check that Coffer's validate.
const timestamps = {
  updatedAt: { type: 'string', format: 'date-time' },
  createdAt: { type: 'string', format: 'date-time' },
};
const ACCRUE_KYC = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    type: { type: 'string', enum: ['Kyc'] },
    attributes: {
      type: 'object',
      properties: {
        status: {
          type: 'string',
          enum: ['Approved', 'AwaitingDocuments', 'Denied', 'ManualReview', 'NotStarted', 'Pending', 'Unknown'],
        },
        ...timestamps,
      },
      required: ['status', 'updatedAt', 'createdAt'],
    },
  },
  required: ['id', 'type', 'attributes'],
};
const ACCRUE_LINK = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    type: { type: 'string', enum: ['DocumentVerificationLink'] },
    attributes: {
      type: 'object',
      properties: { url: { type: 'string', format: 'uri' }, ...timestamps },
      required: ['url', 'updatedAt', 'createdAt'],
    },
  },
  required: ['id', 'type', 'attributes'],
};
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const accrueDocument = (schema: object) =>
  ajv.compile({ type: 'object', properties: { data: schema }, required: ['data'] });
const isAccrueKyc = accrueDocument(ACCRUE_KYC);
const isAccrueLink = accrueDocument(ACCRUE_LINK);
const assertAccrue = (validate: ReturnType<typeof accrueDocument>, body: unknown) =>
  assert.ok(validate(body), JSON.stringify(validate.errors));

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

  const kyc = async (userId: string, as = m) => {
    const res = await t.request('GET', `/api/v1/users/${userId}/kyc/status`, { as });
    assert.equal(res.status, 200, res.raw);
    assertAccrue(isAccrueKyc, res.body);
    return res.body.data.attributes as Record<string, string | null>;
  };
  const status = async (userId: string, as = m) => (await kyc(userId, as)).status;
  /** The sandbox provider answers 500 ms after submission: move the clock there and run the job. */
  const providerAnswers = async () => {
    t.clock.advance(500);
    await t.ctx.jobs.runOnce('kyc-decisions');
  };
  const disclosed = async (as = m) => {
    const u = await createUser(t, as);
    assert.equal((await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as })).status, 204);
    return u;
  };
  const apply = async (userId: string, body: unknown, as = m) => {
    const res = await t.request('POST', `/api/v1/users/${userId}/kyc/application`, { as, body });
    assert.equal(res.status, 200, res.raw);
    assertAccrue(isAccrueKyc, res.body);
    return res.body.data;
  };
  /** A user whose application the sandbox has answered. */
  const decided = async (email: string, as = m) => {
    const u = await disclosed(as);
    await apply(u.id, kycApplication(email), as);
    await providerAnswers();
    return u;
  };
  const link = (userId: string, redirectUrl: string = 'https://shop.example.com/kyc/done', as = m) =>
    t.request('POST', `/api/v1/users/${userId}/kyc/document-verification-link`, {
      as,
      body: { data: { type: 'DocumentVerificationLink', attributes: { redirectUrl } } },
    });
  const complete = (userId: string, as = m) =>
    t.request('POST', `/api/v1/users/${userId}/kyc/document-verification/complete`, { as });
  /** The topics of the user's events, oldest first, and their included resources' types. */
  const eventsOf = async (userId: string, as = m) => {
    const res = await t.request('GET', '/api/v1/webhook-events?page[limit]=50', { as });
    return (
      res.body.data as {
        attributes: {
          userId: string;
          topic: string;
          payload: { included: { type: string; attributes: { status?: string } }[] };
        };
      }[]
    )
      .filter((e) => e.attributes.userId === userId)
      .reverse()
      .map(
        (e) =>
          `${e.attributes.topic}:${e.attributes.payload.included[0]!.type}${e.attributes.payload.included[0]!.attributes.status ? `:${e.attributes.payload.included[0]!.attributes.status}` : ''}`,
      );
  };

  test("a new user is NotStarted (never null) at Accrue's path and Coffer's", async () => {
    const u = await createUser(t, m);
    for (const path of ['kyc/status', 'kyc']) {
      const res = await t.request('GET', `/api/v1/users/${u.id}/${path}`, { as: m });
      assert.equal(res.status, 200);
      assertAccrue(isAccrueKyc, res.body);
      assert.equal(res.body.data.type, 'Kyc');
      assert.equal(res.body.data.id, u.id);
      assert.deepEqual(res.body.data.attributes, {
        status: 'NotStarted',
        disclosuresAcceptedAt: null,
        submittedAt: null,
        documentsSubmittedAt: null,
        decidedAt: null,
        updatedAt: u.attributes.updatedAt,
        createdAt: u.attributes.createdAt,
      });
      assert.deepEqual(res.body.data.relationships.user.data, { type: 'User', id: u.id });
    }
  });

  test('accepting disclosures is 204, records when (status stays NotStarted), and is idempotent', async () => {
    const u = await createUser(t, m);
    const first = await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m });
    assert.equal(first.status, 204);
    assert.equal(first.raw, '');
    const accepted = await kyc(u.id);
    assert.deepEqual([accepted.status, accepted.disclosuresAcceptedAt], ['NotStarted', t.clock.now().toISOString()]);
    t.clock.advance(1000);
    assert.equal((await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m })).status, 204);
    assert.equal(
      (await kyc(u.id)).disclosuresAcceptedAt,
      accepted.disclosuresAcceptedAt,
      'the first acceptance stands',
    );
  });

  test('an application before disclosures is 400 DisclosuresNotAccepted and changes nothing', async () => {
    const u = await createUser(t, m);
    for (const body of [kycApplication('a@example.com'), accrueKycApplication('a@example.com')]) {
      const res = await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, { as: m, body });
      assert.equal(res.status, 400);
      assert.equal(errorsOf(res)[0]!.code, 'DisclosuresNotAccepted');
    }
    assert.equal(await status(u.id), 'NotStarted');
    assert.deepEqual(await eventsOf(u.id), []);
  });

  for (const [email, decision] of [
    ['ok@example.com', 'Approved'],
    ['someone@lowrisk.com', 'Approved'],
    ['someone@highrisk.com', 'ManualReview'],
    ['someone@veryhighrisk.com', 'Denied'],
    ['someone@highrisk.test', 'AwaitingDocuments'],
    ['someone@declined.test', 'Denied'],
    ['SOMEONE@DECLINED.TEST', 'Denied'],
  ] as const) {
    test(`${email}: 200 Pending, then the sandbox decides ${decision}`, async () => {
      const u = await disclosed();
      const res = await apply(u.id, accrueKycApplication(email));
      assert.equal(res.type, 'Kyc');
      assert.equal(res.attributes.status, 'Pending');
      assert.equal(res.attributes.submittedAt, t.clock.now().toISOString());
      // Not yet: the provider answers after its delay.
      await t.ctx.jobs.runOnce('kyc-decisions');
      assert.equal(await status(u.id), 'Pending');
      await providerAnswers();
      const k = await kyc(u.id);
      assert.deepEqual([k.status, k.decidedAt], [decision, t.clock.now().toISOString()]);
    });
  }

  test("Accrue's body (type Kyc: flat US address, phone, ipAddress) is stored as Coffer's, with the name on the profile", async () => {
    const u = await disclosed();
    await apply(
      u.id,
      accrueKycApplication('flat@example.com', {
        firstName: 'Mary',
        lastName: 'Somerville',
        street2: 'Apt 2',
        postalCode: '62701-1234',
      }),
    );
    const [row] = rowsOf<{ address: Record<string, string>; phone: string; ip_address: string }>(
      await t.ctx.db.execute(sql`select address, phone, ip_address from kyc_applications where user_id = ${u.id}`),
    );
    assert.deepEqual(row, {
      address: {
        street: '1 Main St',
        street2: 'Apt 2',
        city: 'Springfield',
        state: 'IL',
        postalCode: '62701-1234',
        country: 'US',
      },
      phone: '5551234567',
      ip_address: '203.0.113.7',
    });
    const profile = (await t.request('GET', `/api/v1/users/${u.id}`, { as: m })).body.data.attributes.profile;
    assert.deepEqual([profile.firstName, profile.lastName], ['Mary', 'Somerville']);
  });

  test('bad applications in either shape are 400 with a pointer for every field, and nothing is written', async () => {
    const u = await disclosed();
    const cases: [(email: string, over: Record<string, unknown>) => unknown, Record<string, unknown>, string][] = [
      [kycApplication, { firstName: '' }, '/data/attributes/firstName'],
      [kycApplication, { lastName: 7 }, '/data/attributes/lastName'],
      [kycApplication, { dateOfBirth: '10/12/1990' }, '/data/attributes/dateOfBirth'],
      [kycApplication, { dateOfBirth: '1990-02-30' }, '/data/attributes/dateOfBirth'],
      [kycApplication, { dateOfBirth: '2999-01-01' }, '/data/attributes/dateOfBirth'],
      [kycApplication, { dateOfBirth: '1800-01-01' }, '/data/attributes/dateOfBirth'],
      [kycApplication, { email: 'nope' }, '/data/attributes/email'],
      [
        kycApplication,
        { address: { street: '1 Main', city: 'X', state: 'Y', postalCode: '1', country: 'USA' } },
        '/data/attributes/address/country',
      ],
      [
        kycApplication,
        { address: { street: '1 Main', city: 'X', state: 'Y', country: 'US' } },
        '/data/attributes/address/postalCode',
      ],
      [
        kycApplication,
        { address: { street: '1 Main', city: 'X', state: 'Y', postalCode: '1', country: 'US', planet: 'Earth' } },
        '/data/attributes/address/planet',
      ],
      [kycApplication, { ssn: '123' }, '/data/attributes/ssn'],
      [accrueKycApplication, { postalCode: '1234' }, '/data/attributes/postalCode'],
      [accrueKycApplication, { postalCode: '12345-67' }, '/data/attributes/postalCode'],
      [accrueKycApplication, { dateOfBirth: '1990-1-1' }, '/data/attributes/dateOfBirth'],
      [accrueKycApplication, { dateOfBirth: '1990-13-01' }, '/data/attributes/dateOfBirth'],
      [accrueKycApplication, { street: 'ab' }, '/data/attributes/street'],
      [accrueKycApplication, { city: 'X' }, '/data/attributes/city'],
      [accrueKycApplication, { state: 'I' }, '/data/attributes/state'],
      [accrueKycApplication, { phone: '555123' }, '/data/attributes/phone'],
      [accrueKycApplication, { phone: undefined }, '/data/attributes/phone'],
      [accrueKycApplication, { ipAddress: 'not-an-ip' }, '/data/attributes/ipAddress'],
      [accrueKycApplication, { country: 'US' }, '/data/attributes/country'],
      [accrueKycApplication, { address: {} }, '/data/attributes/address'],
    ];
    for (const [shape, over, pointer] of cases) {
      const res = await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, {
        as: m,
        body: shape('v@example.com', over),
      });
      assert.equal(res.status, 400, JSON.stringify(over));
      assert.deepEqual(
        errorsOf(res).map((e) => e.source?.pointer),
        [pointer],
        `${JSON.stringify(over)}: ${res.raw}`,
      );
    }
    const wrongType = await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, {
      as: m,
      body: { data: { type: 'Application', attributes: {} } },
    });
    assert.deepEqual(
      errorsOf(wrongType).map((e) => e.source?.pointer),
      ['/data/type'],
    );
    assert.equal(await status(u.id), 'NotStarted', 'nothing was half-written');
    assert.deepEqual(rowsOf(await t.ctx.db.execute(sql`select id from kyc_applications where user_id = ${u.id}`)), []);
  });

  test('a pending, in-review, approved or denied user cannot apply again (400 KycApplicationFailed); AwaitingDocuments can', async () => {
    const again = (userId: string) =>
      t.request('POST', `/api/v1/users/${userId}/kyc/application`, { as: m, body: kycApplication('x@example.com') });
    const u = await disclosed();
    await apply(u.id, kycApplication('x@highrisk.test'));
    const whilePending = await again(u.id);
    assert.deepEqual([whilePending.status, errorsOf(whilePending)[0]!.code], [400, 'KycApplicationFailed']);
    await providerAnswers();
    assert.equal(await status(u.id), 'AwaitingDocuments');
    await apply(u.id, kycApplication('x@example.com'));
    await providerAnswers();
    assert.equal(await status(u.id), 'Approved');
    for (const email of ['r@highrisk.com', 'd@declined.test']) {
      const v = await decided(email);
      const res = await again(v.id);
      assert.deepEqual([res.status, errorsOf(res)[0]!.code], [400, 'KycApplicationFailed'], email);
    }
    const afterApproval = await again(u.id);
    assert.deepEqual([afterApproval.status, errorsOf(afterApproval)[0]!.code], [400, 'KycApplicationFailed']);
    // Disclosures again change nothing once applied.
    await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m });
    assert.equal(await status(u.id), 'Approved');
  });

  describe('document verification', () => {
    test('AwaitingDocuments: a link to the sandbox page, completion, then the decision; every change has its events', async () => {
      const u = await decided('docs@highrisk.test');
      const res = await link(u.id, "https://shop.example.com/kyc/done?user=1&step='2'");
      assert.equal(res.status, 200, res.raw);
      assertAccrue(isAccrueLink, res.body);
      const l = res.body.data;
      assert.equal(l.attributes.url, `http://pay.test/kyc/documents/${l.id}`);
      assert.equal(l.attributes.redirectUrl, "https://shop.example.com/kyc/done?user=1&step='2'");
      assert.deepEqual(l.relationships.user.data, { type: 'User', id: u.id });

      // The page the user opens: no documents needed, back to the shop (the URL escaped).
      const page = await t.pay.inject({ method: 'GET', url: `/kyc/documents/${l.id}` });
      assert.equal(page.statusCode, 200);
      assert.match(String(page.headers['content-type']), /^text\/html/);
      assert.match(String(page.headers['content-security-policy']), /default-src 'none'/);
      assert.ok(page.body.includes('href="https://shop.example.com/kyc/done?user=1&#38;step=&#39;2&#39;"'), page.body);

      const done = await complete(u.id);
      assert.equal(done.status, 200, done.raw);
      assertAccrue(isAccrueKyc, done.body);
      assert.deepEqual(
        [done.body.data.attributes.status, done.body.data.attributes.documentsSubmittedAt],
        ['Pending', t.clock.now().toISOString()],
      );
      const repeat = await complete(u.id);
      assert.equal(repeat.status, 200);
      assert.deepEqual(repeat.body.data.attributes, done.body.data.attributes, 'completing again changes nothing');
      await providerAnswers();
      assert.equal(await status(u.id), 'Approved');
      const late = await complete(u.id);
      assert.deepEqual(
        [late.status, late.body.data.attributes.status],
        [200, 'Approved'],
        'a late retry answers the decision',
      );
      assert.deepEqual(await eventsOf(u.id), [
        'KycCreated:Kyc:Pending',
        'KycPending:Kyc:Pending',
        'KycAwaitingDocuments:Kyc:AwaitingDocuments',
        'ApplicationAwaitingDocuments:User',
        'KycPending:Kyc:Pending',
        'KycApproved:Kyc:Approved',
        'ApplicationApproved:User',
      ]);
    });

    test('ManualReview stays in review (asked about, no events) until documents; after them a +denied address is Denied', async () => {
      const u = await decided('ada+denied@highrisk.com');
      assert.equal(await status(u.id), 'ManualReview');
      for (let i = 0; i < 3; i++) {
        t.clock.advance(600_000);
        await t.ctx.jobs.runOnce('kyc-decisions');
      }
      assert.equal(await status(u.id), 'ManualReview');
      assert.equal((await link(u.id)).status, 200);
      assert.equal((await complete(u.id)).body.data.attributes.status, 'Pending');
      await providerAnswers();
      assert.equal(await status(u.id), 'Denied');
      assert.deepEqual(await eventsOf(u.id), [
        'KycCreated:Kyc:Pending',
        'KycPending:Kyc:Pending',
        'KycManualReview:Kyc:ManualReview',
        'KycPending:Kyc:Pending',
        'KycDeclined:Kyc:Denied',
        'ApplicationDeclined:User',
      ]);
    });

    test('outside AwaitingDocuments and ManualReview, links and completion are 400 DocumentVerificationFailed and write nothing', async () => {
      const fresh = await createUser(t, m);
      const approved = await decided('fine@example.com');
      const denied = await decided('no@declined.test');
      const pending = await disclosed();
      await apply(pending.id, kycApplication('p@example.com'));
      for (const u of [fresh, pending, approved, denied]) {
        for (const res of [await link(u.id), await complete(u.id)]) {
          assert.equal(res.status, 400, res.raw);
          assert.equal(errorsOf(res)[0]!.code, 'DocumentVerificationFailed');
        }
      }
      assert.equal(await status(pending.id), 'Pending');
      const links = rowsOf(
        await t.ctx.db.execute(
          sql`select id from kyc_document_links where user_id in (${fresh.id}, ${pending.id}, ${approved.id}, ${denied.id})`,
        ),
      );
      assert.deepEqual(links, []);
    });

    test('a redirectUrl must be an http(s) URL', async () => {
      const u = await decided('redirect@highrisk.test');
      for (const redirectUrl of ['javascript:alert(1)', 'not a url', 'ftp://example.com/x', '']) {
        const res = await link(u.id, redirectUrl);
        assert.equal(res.status, 400, redirectUrl);
        assert.deepEqual(
          errorsOf(res).map((e) => [e.code, e.source?.pointer]),
          [['ValidationError', '/data/attributes/redirectUrl']],
          redirectUrl,
        );
      }
      const noBody = await t.request('POST', `/api/v1/users/${u.id}/kyc/document-verification-link`, { as: m });
      assert.equal(noBody.status, 400);
      assert.equal(await status(u.id), 'AwaitingDocuments');
    });

    test('the sandbox page serves only known links, for an hour', async () => {
      const u = await decided('page@highrisk.test');
      const id = (await link(u.id)).body.data.id;
      const get = (linkId: string) => t.pay.inject({ method: 'GET', url: `/kyc/documents/${linkId}` });
      assert.equal((await get(id)).statusCode, 200);
      assert.equal((await get('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b')).statusCode, 404);
      assert.equal((await get('not-a-uuid')).statusCode, 400);
      t.clock.advance(3_600_000);
      const expired = await get(id);
      assert.equal(expired.statusCode, 404);
      assert.match(expired.body, /expired/);
    });
  });

  test("another merchant's user is 404 on every KYC route, and nothing changes", async () => {
    const u = await decided('mine@highrisk.test');
    for (const [method, url, body] of [
      ['POST', `/api/v1/users/${u.id}/disclosures/kyc`, undefined],
      ['POST', `/api/v1/users/${u.id}/kyc/application`, kycApplication('x@example.com')],
      ['POST', `/api/v1/users/${u.id}/kyc/application`, accrueKycApplication('x@example.com')],
      ['GET', `/api/v1/users/${u.id}/kyc`, undefined],
      ['GET', `/api/v1/users/${u.id}/kyc/status`, undefined],
      [
        'POST',
        `/api/v1/users/${u.id}/kyc/document-verification-link`,
        { data: { type: 'DocumentVerificationLink', attributes: { redirectUrl: 'https://x.example.com' } } },
      ],
      ['POST', `/api/v1/users/${u.id}/kyc/document-verification/complete`, undefined],
    ] as const) {
      const res = await t.request(method, url, { as: other, body });
      assert.equal(res.status, 404, url);
      assert.equal(errorsOf(res)[0]!.code, 'UserNotFound');
    }
    assert.equal(await status(u.id), 'AwaitingDocuments');
    assert.deepEqual(
      rowsOf(await t.ctx.db.execute(sql`select id from kyc_document_links where user_id = ${u.id}`)),
      [],
    );
  });
});

describe('KYC with the background job running', () => {
  test('the sandbox decision arrives within one second of the answer', async () => {
    // Real time for this one: the job runs on its own timer. The second is measured between the
    // times the server records (the application's creation, the decision), so a loaded test
    // machine's slow requests and the polling below do not count against it; the poll only waits.
    const t = await createTestApp({ clock: systemClock });
    t.ctx.jobs.start();
    try {
      const m = await t.createMerchant();
      const u = await createUser(t, m);
      await t.request('POST', `/api/v1/users/${u.id}/disclosures/kyc`, { as: m });
      const res = await t.request('POST', `/api/v1/users/${u.id}/kyc/application`, {
        as: m,
        body: accrueKycApplication('fast@lowrisk.com'),
      });
      assert.equal(res.status, 200);
      let s = 'Pending';
      for (const until = Date.now() + 15_000; s === 'Pending' && Date.now() < until; ) {
        await new Promise((r) => setTimeout(r, 50));
        s = (await t.request('GET', `/api/v1/users/${u.id}/kyc/status`, { as: m })).body.data.attributes.status;
      }
      assert.equal(s, 'Approved');
      const [app] = rowsOf<{ took: number }>(
        await t.ctx.db.execute(
          sql`select (extract(epoch from decided_at - created_at) * 1000)::int as took from kyc_applications where user_id = ${u.id}`,
        ),
      );
      assert.ok(app!.took >= 0 && app!.took < 1000, `decided ${app!.took} ms after the application was made`);
    } finally {
      await t.close();
    }
  });
});
