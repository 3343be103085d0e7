// JSON:API 1.1 request documents (docs/adr/0001-spec-then-accrue.md): top-level jsonapi, meta and links are accepted
// and ignored on every body; a PATCH's data.id must be the resource the URL names (409 Conflict
// otherwise, nothing changed), on every PATCH route: webhooks, the attached profile, admin clients.
// (A JSON:API library's own requests: jsonapi-clients.test.ts.)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { webhookBody } from '../test/fixtures.ts';
import { createTestApp, createUser, errorsOf, phone, type Merchant, type TestApp } from '../test/harness.ts';

const OTHER_ID = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
const TOP_LEVEL = {
  jsonapi: { version: '1.1' },
  meta: { requestedBy: 'test' },
  links: { self: 'http://example.com/x' },
};

describe('JSON:API request documents', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  const webhook = async (as = m) => {
    const res = await t.request('POST', '/api/v1/webhooks', { as, body: webhookBody({ name: 'Before' }) });
    assert.equal(res.status, 201, res.raw);
    return res.body.data.id as string;
  };
  const webhookName = async (id: string) =>
    (await t.request('GET', `/api/v1/webhooks/${id}`, { as: m })).body.data.attributes.name;

  test('top-level jsonapi, meta and links are accepted and ignored on a create and an update', async () => {
    const created = await t.request('POST', '/api/v1/users', {
      as: m,
      body: { ...TOP_LEVEL, data: { type: 'User', attributes: { phoneNumber: phone() } } },
    });
    assert.equal(created.status, 201, created.raw);
    const id = await webhook();
    const updated = await t.request('PATCH', `/api/v1/webhooks/${id}`, {
      as: m,
      body: { ...TOP_LEVEL, data: { type: 'Webhook', id, attributes: { name: 'After' } } },
    });
    assert.equal(updated.status, 200, updated.raw);
    assert.equal(await webhookName(id), 'After');
  });

  test('those members must be objects, and other unknown members are still refused', async () => {
    for (const [member, value] of [
      ['jsonapi', '1.1'],
      ['meta', []],
      ['links', null],
    ] as const) {
      const res = await t.request('POST', '/api/v1/users', {
        as: m,
        body: { [member]: value, data: { type: 'User', attributes: { phoneNumber: phone() } } },
      });
      assert.equal(res.status, 400, member);
      assert.deepEqual(
        errorsOf(res).map((e) => [e.code, e.source?.pointer]),
        [['ValidationError', `/${member}`]],
      );
    }
    const included = await t.request('POST', '/api/v1/users', {
      as: m,
      body: { included: [], data: { type: 'User', attributes: { phoneNumber: phone() } } },
    });
    assert.equal(errorsOf(included)[0]!.source?.pointer, '/included');
    const resourceMeta = await t.request('POST', '/api/v1/users', {
      as: m,
      body: { data: { type: 'User', meta: {}, attributes: { phoneNumber: phone() } } },
    });
    assert.equal(errorsOf(resourceMeta)[0]!.source?.pointer, '/data/meta', 'only the top level is ignored');
  });

  test("a PATCH's data.id equal to the URL's is accepted; another is 409 Conflict and changes nothing", async () => {
    const id = await webhook();
    const same = await t.request('PATCH', `/api/v1/webhooks/${id}`, {
      as: m,
      body: { data: { type: 'Webhook', id, attributes: { name: 'Same' } } },
    });
    assert.equal(same.status, 200, same.raw);
    assert.equal(same.body.data.id, id);
    const other = await webhook();
    for (const wrong of [other, OTHER_ID, id.toUpperCase()]) {
      const res = await t.request('PATCH', `/api/v1/webhooks/${id}`, {
        as: m,
        body: { data: { type: 'Webhook', id: wrong, attributes: { name: 'Changed' } } },
      });
      assert.equal(res.status, 409, wrong);
      assert.deepEqual(
        errorsOf(res).map((e) => [e.code, e.source?.pointer]),
        [['Conflict', '/data/id']],
      );
    }
    assert.equal(await webhookName(id), 'Same');
    assert.equal(await webhookName(other), 'Before');
  });

  test('a data.id that is not a string is 400; an id on a create is still refused', async () => {
    const id = await webhook();
    for (const bad of [7, '', null]) {
      const res = await t.request('PATCH', `/api/v1/webhooks/${id}`, {
        as: m,
        body: { data: { type: 'Webhook', id: bad, attributes: { name: 'X' } } },
      });
      assert.equal(res.status, 400, String(bad));
      assert.equal(errorsOf(res)[0]!.source?.pointer, '/data/id');
    }
    const create = await t.request('POST', '/api/v1/webhooks', {
      as: m,
      body: { data: { ...webhookBody({}).data, id: OTHER_ID } },
    });
    assert.equal(create.status, 400);
    assert.equal(errorsOf(create)[0]!.source?.pointer, '/data/id');
    assert.equal(await webhookName(id), 'Before');
  });

  test("another merchant's webhook is 404 even with a matching data.id", async () => {
    const id = await webhook();
    const res = await t.request('PATCH', `/api/v1/webhooks/${id}`, {
      as: other,
      body: { data: { type: 'Webhook', id, attributes: { name: 'Theirs' } } },
    });
    assert.equal(res.status, 404);
    assert.equal(errorsOf(res)[0]!.code, 'WebhookNotFound');
    assert.equal(await webhookName(id), 'Before');
  });

  describe('the attached profile: data.id may be the user id or the URL reference', () => {
    const patch = (reference: string, body: unknown) =>
      t.request('PATCH', `/api/v1/users/${encodeURIComponent(reference)}/attached-profile`, { as: m, body });
    const attached = async (u: { attributes: Record<string, any> }) =>
      (
        await t.request(
          'GET',
          `/api/v1/users?filter[phoneNumber]=${encodeURIComponent(u.attributes.profile.phoneNumber)}`,
          { as: m },
        )
      ).body.data[0].attributes.attachedProfile;

    test('the user id (URL by id or by reference) and the reference itself are accepted', async () => {
      const u = await createUser(t, m);
      const byId = await patch(u.id, {
        data: { type: 'AttachedProfile', id: u.id, attributes: { referenceId: `ref-${u.id}` } },
      });
      assert.equal(byId.status, 200, byId.raw);
      const byRefWithUserId = await patch(`ref-${u.id}`, {
        ...TOP_LEVEL,
        data: { type: 'AttachedProfile', id: u.id, attributes: { email: 'one@example.com' } },
      });
      assert.equal(byRefWithUserId.status, 200, byRefWithUserId.raw);
      const byRefWithRef = await patch(`ref-${u.id}`, {
        data: { type: 'AttachedProfile', id: `ref-${u.id}`, attributes: { email: 'two@example.com' } },
      });
      assert.equal(byRefWithRef.status, 200, byRefWithRef.raw);
      const bare = await patch(`ref-${u.id}`, {
        type: 'AttachedProfile',
        id: u.id,
        attributes: { email: 'three@example.com' },
      });
      assert.equal(bare.status, 200, bare.raw);
      assert.equal((await attached(u)).email, 'three@example.com');
    });

    test("another user's id is 409 Conflict and changes nothing (wrapped or bare)", async () => {
      const u = await createUser(t, m);
      const v = await createUser(t, m);
      const wrapped = await patch(u.id, {
        data: { type: 'AttachedProfile', id: v.id, attributes: { referenceId: 'never-set' } },
      });
      assert.equal(wrapped.status, 409);
      assert.deepEqual(
        errorsOf(wrapped).map((e) => [e.code, e.source?.pointer]),
        [['Conflict', '/data/id']],
      );
      const bare = await patch(u.id, { type: 'AttachedProfile', id: v.id, attributes: { email: 'never@example.com' } });
      assert.equal(bare.status, 409);
      assert.deepEqual(
        errorsOf(bare).map((e) => [e.code, e.source?.pointer]),
        [['Conflict', '/id']],
      );
      const bareBadId = await patch(u.id, {
        type: 'AttachedProfile',
        id: 5,
        attributes: { email: 'never@example.com' },
      });
      assert.deepEqual(
        errorsOf(bareBadId).map((e) => [e.code, e.source?.pointer]),
        [['ValidationError', '/id']],
      );
      assert.deepEqual(await attached(u), {});
    });

    test('an unresolvable reference is still 400 InvalidIdentifier, whatever the id', async () => {
      const res = await patch('nobody-has-this', {
        data: { type: 'AttachedProfile', id: 'nobody-has-this', attributes: { email: 'x@example.com' } },
      });
      assert.equal(res.status, 400);
      assert.equal(errorsOf(res)[0]!.code, 'InvalidIdentifier');
    });
  });

  test('admin client PATCH follows the same rule', async () => {
    const c = await t.createMerchant();
    const ok = await t.adminRequest('PATCH', `/admin/v1/clients/${c.clientId}`, {
      body: { ...TOP_LEVEL, data: { type: 'Client', id: c.clientId, attributes: { name: 'Renamed' } } },
    });
    assert.equal(ok.status, 200, ok.raw);
    const wrong = await t.adminRequest('PATCH', `/admin/v1/clients/${c.clientId}`, {
      body: { data: { type: 'Client', id: m.clientId, attributes: { name: 'Wrong' } } },
    });
    assert.equal(wrong.status, 409);
    assert.equal(errorsOf(wrong)[0]!.code, 'Conflict');
    const [mine, theirs] = await Promise.all(
      [c.clientId, m.clientId].map((id) => t.adminRequest('GET', `/admin/v1/clients/${id}`)),
    );
    assert.equal(mine!.body.data.attributes.name, 'Renamed');
    assert.notEqual(theirs!.body.data.attributes.name, 'Wrong');
  });

  test('the OpenAPI document shows data.id on PATCH bodies, the top-level members on every body, and 409 on PATCH', async () => {
    const doc = (await t.request('GET', '/api/v1/openapi.json')).body;
    const schemaOf = (path: string, method: string) =>
      doc.paths[path][method].requestBody.content['application/vnd.api+json'].schema;
    const update = schemaOf('/api/v1/webhooks/{webhookId}', 'patch');
    assert.equal(update.properties.data.properties.id.type, 'string');
    assert.ok(!update.properties.data.required.includes('id'));
    for (const member of ['jsonapi', 'meta', 'links']) assert.equal(update.properties[member].type, 'object', member);
    const create = schemaOf('/api/v1/webhooks', 'post');
    assert.equal(create.properties.data.properties.id, undefined, 'no id on a create');
    assert.equal(create.properties.jsonapi.type, 'object');
    assert.ok(doc.paths['/api/v1/webhooks/{webhookId}'].patch.responses['409']);
    const profile = schemaOf('/api/v1/users/{userReference}/attached-profile', 'patch');
    assert.deepEqual(
      profile.anyOf.map((b: { properties: Record<string, { properties?: Record<string, unknown> }> }) =>
        Boolean(b.properties.id ?? b.properties.data?.properties?.id),
      ),
      [true, true],
    );
  });
});
