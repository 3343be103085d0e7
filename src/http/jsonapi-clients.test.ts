// Off-the-shelf JSON:API libraries against Coffer over real HTTP (docs/adr/0001-spec-then-accrue.md): kitsu (a
// JSON:API client: it serialises attributes into resource objects, sends a PATCH's data.id and
// deserialises responses and errors) and ts-japi (a serializer that adds the top-level jsonapi
// and meta members). What they send is what a merchant's JSON:API stack sends.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import Kitsu from 'kitsu';
import tsJapi from 'ts-japi';
import { createTestApp, LOCAL_RECEIVERS, phone, uniqueEmail, type Merchant, type TestApp } from '../test/harness.ts';

const { Serializer, Metaizer } = tsJapi;

describe('JSON:API libraries as clients', () => {
  let t: TestApp;
  let m: Merchant;
  let base: string;
  let api: Kitsu;
  before(async () => {
    // The webhooks these clients register point at loopback.
    t = await createTestApp({ env: LOCAL_RECEIVERS });
    m = await t.createMerchant();
    base = `${await t.api.listen({ port: 0, host: '127.0.0.1' })}/api/v1`;
    // Coffer's types are singular PascalCase (User, Webhook): no pluralising or re-casing.
    api = new Kitsu({
      baseURL: base,
      headers: m.headers,
      pluralize: false,
      camelCaseTypes: false,
      resourceCase: 'none',
    });
  });
  after(() => t.close());

  /** A kitsu call that must fail: its HTTP status and the deserialised error codes. */
  const failure = async (call: Promise<unknown>) => {
    const err = (await call.then(
      () => assert.fail('expected an error response'),
      (e: unknown) => e,
    )) as { response?: { status: number }; errors?: { code: string; source?: { pointer?: string } }[] };
    return { status: err.response?.status, errors: err.errors?.map((e) => [e.code, e.source?.pointer]) };
  };

  test('kitsu creates a user and a webhook, updates both with data.id, and reads them back', async () => {
    const phoneNumber = phone();
    const user = await api.request({
      method: 'POST',
      url: 'users',
      type: 'User',
      body: { phoneNumber, email: uniqueEmail('kitsu') },
    });
    assert.equal(user.status, 201);
    assert.equal(user.data.type, 'User');
    assert.equal(user.data.profile.phoneNumber, phoneNumber, 'attributes deserialised onto the resource');

    // The attached profile by user id: kitsu puts the id in data.id.
    const profile = await api.request({
      method: 'PATCH',
      url: `users/${user.data.id}/attached-profile`,
      type: 'AttachedProfile',
      body: { id: user.data.id, referenceId: `kitsu-${user.data.id}` },
    });
    assert.equal(profile.status, 200);
    assert.equal(profile.data.referenceId, `kitsu-${user.data.id}`);

    const created = await api.request({
      method: 'POST',
      url: 'webhooks',
      type: 'Webhook',
      body: { name: 'Orders', url: 'http://127.0.0.1:9/hooks', topics: ['*'], enabled: true },
    });
    assert.equal(created.status, 201);
    assert.match(created.data.secret, /^whsec_/);
    const updated = await api.request({
      method: 'PATCH',
      url: `webhooks/${created.data.id}`,
      type: 'Webhook',
      body: { id: created.data.id, name: 'Renamed', enabled: false },
    });
    assert.equal(updated.status, 200);
    assert.deepEqual([updated.data.id, updated.data.name, updated.data.enabled], [created.data.id, 'Renamed', false]);

    const read = await api.get(`webhooks/${created.data.id}`);
    assert.equal(read.data.name, 'Renamed');
    const list = await api.get('users', { params: { filter: { phoneNumber }, page: { limit: 5 } } });
    assert.equal(list.meta.total, 1);
    assert.equal(list.data[0].attachedProfile.referenceId, `kitsu-${user.data.id}`);
  });

  test("kitsu's PATCH naming another resource is 409 Conflict, and nothing changes", async () => {
    const a = await api.request({
      method: 'POST',
      url: 'webhooks',
      type: 'Webhook',
      body: { name: 'A', url: 'http://127.0.0.1:9/a', topics: ['*'], enabled: true },
    });
    const b = await api.request({
      method: 'POST',
      url: 'webhooks',
      type: 'Webhook',
      body: { name: 'B', url: 'http://127.0.0.1:9/b', topics: ['*'], enabled: true },
    });
    const res = await failure(
      api.request({
        method: 'PATCH',
        url: `webhooks/${a.data.id}`,
        type: 'Webhook',
        body: { id: b.data.id, name: 'Hijacked' },
      }),
    );
    assert.deepEqual(res, { status: 409, errors: [['Conflict', '/data/id']] });
    assert.deepEqual(
      [(await api.get(`webhooks/${a.data.id}`)).data.name, (await api.get(`webhooks/${b.data.id}`)).data.name],
      ['A', 'B'],
    );
  });

  test('kitsu goes through KYC as Accrue documents it: a user by e-mail alone, a Kyc application, a document link', async () => {
    // A merchant of its own: the events go to no webhook (the shared database's other tests count deliveries).
    const km = await t.createMerchant();
    const api = new Kitsu({
      baseURL: base,
      headers: km.headers,
      pluralize: false,
      camelCaseTypes: false,
      resourceCase: 'none',
    });
    const email = `kitsu.${randomUUID().slice(0, 8)}@highrisk.test`;
    const user = await api.request({ method: 'POST', url: 'users', type: 'User', body: { email } });
    assert.deepEqual([user.status, user.data.profile.email, user.data.profile.phoneNumber], [201, email, undefined]); // unset: left out
    assert.equal(
      (await fetch(`${base}/users/${user.data.id}/disclosures/kyc`, { method: 'POST', headers: km.headers })).status,
      204,
    );
    const applied = await api.request({
      method: 'POST',
      url: `users/${user.data.id}/kyc/application`,
      type: 'Kyc',
      body: {
        firstName: 'Kit',
        lastName: 'Su',
        phone: '5551234567',
        dateOfBirth: '1990-01-15',
        email,
        street: '123 Main Street',
        city: 'New York',
        state: 'NY',
        postalCode: '10001',
      },
    });
    assert.deepEqual([applied.status, applied.data.type, applied.data.status], [200, 'Kyc', 'Pending']);
    t.clock.advance(500);
    await t.ctx.jobs.runOnce('kyc-decisions');
    assert.equal((await api.get(`users/${user.data.id}/kyc/status`)).data.status, 'AwaitingDocuments');
    const link = await api.request({
      method: 'POST',
      url: `users/${user.data.id}/kyc/document-verification-link`,
      type: 'DocumentVerificationLink',
      body: { redirectUrl: 'https://shop.example.com/kyc' },
    });
    assert.equal(link.status, 200);
    assert.equal(link.data.url, `http://pay.test/kyc/documents/${link.data.id}`);
  });

  test('ts-japi documents (top-level jsonapi and meta, data.id on the update) are accepted', async () => {
    const serializer = new Serializer('Webhook', {
      version: '1.1',
      metaizers: { document: new Metaizer(() => ({ sentBy: 'ts-japi' })) },
    });
    const send = async (method: 'POST' | 'PATCH', path: string, doc: unknown) => {
      const res = await fetch(`${base}/${path}`, {
        method,
        headers: { ...m.headers, 'content-type': 'application/vnd.api+json' },
        body: JSON.stringify(doc),
      });
      return {
        status: res.status,
        body: (await res.json()) as {
          data: { id: string; attributes: Record<string, unknown> };
          errors?: { code: string }[];
        },
      };
    };
    const createDoc = await serializer.serialize({
      name: 'Serialised',
      url: 'http://127.0.0.1:9/s',
      topics: ['PaymentCreated'],
      enabled: true,
    });
    assert.deepEqual(Object.keys(createDoc).sort(), ['data', 'jsonapi', 'meta'], 'what the library sends');
    const created = await send('POST', 'webhooks', createDoc);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.data.id;
    const updated = await send(
      'PATCH',
      `webhooks/${id}`,
      await serializer.serialize({ id, topics: ['PaymentCreated', 'PaymentUpdated'] }),
    );
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.deepEqual(updated.body.data.attributes.topics, ['PaymentCreated', 'PaymentUpdated']);
    const wrong = await send(
      'PATCH',
      `webhooks/${id}`,
      await serializer.serialize({ id: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', name: 'Wrong' }),
    );
    assert.equal(wrong.status, 409);
    assert.equal(wrong.body.errors?.[0]?.code, 'Conflict');
    assert.equal((await api.get(`webhooks/${id}`)).data.name, 'Serialised');
  });
});
