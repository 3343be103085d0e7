// Users (spec "Users and identity", docs/identity.md#users-in-detail): create, list, get, attached profile.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  createTestApp,
  createUser,
  errorsOf,
  phone,
  uniqueEmail,
  type Merchant,
  type TestApp,
} from '../../test/harness.ts';

const body = (attributes: Record<string, unknown>) => ({ data: { type: 'User', attributes } });
const profileBody = (attributes: Record<string, unknown>) => ({ data: { type: 'AttachedProfile', attributes } });

describe('users', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  describe('create', () => {
    test('201 with the full User resource and a Location header', async () => {
      const p = phone();
      const res = await t.request('POST', '/api/v1/users', {
        as: m,
        body: body({ phoneNumber: p, email: 'Ada.L@Example.com', firstName: 'Ada', lastName: 'Lovelace' }),
      });
      assert.equal(res.status, 201);
      const u = res.body.data;
      assert.equal(u.type, 'User');
      assert.match(u.id, /^[0-9a-f-]{36}$/);
      assert.equal(res.headers.location, `http://api.test/api/v1/users/${u.id}`);
      assert.deepEqual(u.attributes.profile, {
        firstName: 'Ada',
        lastName: 'Lovelace',
        email: 'ada.l@example.com',
        phoneNumber: p,
      });
      assert.deepEqual(u.attributes.attachedProfile, {}, 'unset members are left out');
      assert.equal(u.attributes.disabled, false);
      assert.match(u.attributes.publicId, /^[0-9A-Z]{12}$/);
      assert.equal(u.attributes.createdAt, t.clock.now().toISOString());
      assert.equal(u.attributes.updatedAt, u.attributes.createdAt);
    });

    test("Accrue's CreateUser: an e-mail address without a phone number is a user too", async () => {
      const email = uniqueEmail('accrue');
      const res = await t.request('POST', '/api/v1/users', {
        as: m,
        body: body({ email, firstName: 'Grace', lastName: 'Hopper' }),
      });
      assert.equal(res.status, 201, res.raw);
      // An unset member is left out: Accrue types it as a string.
      assert.deepEqual(res.body.data.attributes.profile, { firstName: 'Grace', lastName: 'Hopper', email });
      const again = await t.request('POST', '/api/v1/users', { as: m, body: body({ email }) });
      assert.equal(again.status, 409);
      assert.equal(errorsOf(again)[0]!.code, 'UserAlreadyExists');
      // Several users without a phone number: none is another's duplicate.
      assert.equal(
        (await t.request('POST', '/api/v1/users', { as: m, body: body({ email: uniqueEmail('accrue') }) })).status,
        201,
      );
    });

    test('a user needs a phone number or an e-mail address; the phone number must be E.164', async () => {
      for (const attrs of [{}, { firstName: 'Nobody' }]) {
        const missing = await t.request('POST', '/api/v1/users', { as: m, body: body(attrs) });
        assert.equal(missing.status, 400);
        assert.deepEqual(
          errorsOf(missing).map((e) => [e.code, e.source?.pointer]),
          [['ValidationError', '/data/attributes']],
        );
      }
      for (const bad of ['4155550123', '+0155550123', '+1 415 555 0123', '+1415555012345678', '+', 'phone', '']) {
        const res = await t.request('POST', '/api/v1/users', { as: m, body: body({ phoneNumber: bad }) });
        assert.equal(res.status, 400, bad);
        assert.equal(errorsOf(res)[0]!.code, 'ValidationError', bad);
        assert.equal(errorsOf(res)[0]!.source?.pointer, '/data/attributes/phoneNumber', bad);
      }
    });

    test('email must be an e-mail address; names must be non-empty strings of bounded length', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ email: 'nope' }, 'email'],
        [{ email: 'a@' }, 'email'],
        [{ email: 42 }, 'email'],
        [{ email: `${'a'.repeat(250)}@example.com` }, 'email'],
        [{ firstName: '' }, 'firstName'],
        [{ firstName: 'x'.repeat(101) }, 'firstName'],
        [{ lastName: ['x'] }, 'lastName'],
        [{ lastName: null }, 'lastName'],
        [{ disabled: true }, 'disabled'],
        [{ publicId: 'X' }, 'publicId'],
      ];
      for (const [attrs, field] of cases) {
        const res = await t.request('POST', '/api/v1/users', { as: m, body: body({ phoneNumber: phone(), ...attrs }) });
        assert.equal(res.status, 400, JSON.stringify(attrs));
        assert.deepEqual(
          errorsOf(res).map((e) => e.source?.pointer),
          [`/data/attributes/${field}`],
          JSON.stringify(attrs),
        );
      }
    });

    test('a duplicate phone or e-mail (any case) within a merchant is 409 UserAlreadyExists', async () => {
      const p = phone();
      const email = uniqueEmail();
      const first = await createUser(t, m, { phoneNumber: p, email });
      const dupPhone = await t.request('POST', '/api/v1/users', { as: m, body: body({ phoneNumber: p }) });
      assert.equal(dupPhone.status, 409);
      assert.equal(errorsOf(dupPhone)[0]!.code, 'UserAlreadyExists');
      assert.equal(errorsOf(dupPhone)[0]!.source?.pointer, '/data/attributes/phoneNumber');
      // The error names the user that exists, by id and by link, so the client can go on with it.
      assert.equal(errorsOf(dupPhone)[0]!.meta.existingId, first.id);
      const about = errorsOf(dupPhone)[0]!.links!.about!;
      assert.ok(about.endsWith(`/api/v1/users/${first.id}`), about);
      assert.equal((await t.request('GET', new URL(about).pathname, { as: m })).body.data.id, first.id);
      const dupEmail = await t.request('POST', '/api/v1/users', {
        as: m,
        body: body({ phoneNumber: phone(), email: email.toUpperCase() }),
      });
      assert.equal(dupEmail.status, 409);
      assert.equal(errorsOf(dupEmail)[0]!.source?.pointer, '/data/attributes/email');
      assert.equal(errorsOf(dupEmail)[0]!.meta.existingId, first.id);
      // Another merchant may have a user with the same phone and e-mail.
      const elsewhere = await t.request('POST', '/api/v1/users', { as: other, body: body({ phoneNumber: p, email }) });
      assert.equal(elsewhere.status, 201);
    });

    test('concurrent creates of one phone number make exactly one user', async () => {
      const p = phone();
      const results = await Promise.all(
        Array.from({ length: 8 }, () => t.request('POST', '/api/v1/users', { as: m, body: body({ phoneNumber: p }) })),
      );
      assert.equal(results.filter((r) => r.status === 201).length, 1);
      assert.equal(results.filter((r) => r.status === 409).length, 7);
    });
  });

  describe('list', () => {
    let lm: Merchant;
    let a: { id: string };
    let b: { id: string };
    const pa = phone();
    const eb = uniqueEmail('bee');
    before(async () => {
      lm = await t.createMerchant();
      a = await createUser(t, lm, { phoneNumber: pa });
      b = await createUser(t, lm, { email: eb });
      await createUser(t, lm);
      await t.request('PATCH', `/api/v1/users/${a.id}/attached-profile`, {
        as: lm,
        body: profileBody({ referenceId: 'ref-a' }),
      });
      await t.request('PATCH', `/api/v1/users/${b.id}/attached-profile`, {
        as: lm,
        body: profileBody({ stableReferenceId: 'stable-b' }),
      });
    });

    test("lists only the merchant's own users", async () => {
      const res = await t.request('GET', '/api/v1/users', { as: lm });
      assert.equal(res.body.meta.total, 3);
      const mine = await t.request('GET', '/api/v1/users?page[limit]=50', { as: other });
      assert.ok(mine.body.data.every((u: { id: string }) => u.id !== a.id && u.id !== b.id));
    });

    test('filter[phoneNumber], filter[email] (any case) and filter[referenceId] (either reference)', async () => {
      const byPhone = await t.request('GET', `/api/v1/users?filter[phoneNumber]=${encodeURIComponent(pa)}`, { as: lm });
      assert.deepEqual(
        byPhone.body.data.map((u: { id: string }) => u.id),
        [a.id],
      );
      const byEmail = await t.request('GET', `/api/v1/users?filter[email]=${encodeURIComponent(eb.toUpperCase())}`, {
        as: lm,
      });
      assert.deepEqual(
        byEmail.body.data.map((u: { id: string }) => u.id),
        [b.id],
      );
      const byRef = await t.request('GET', '/api/v1/users?filter[referenceId]=ref-a', { as: lm });
      assert.deepEqual(
        byRef.body.data.map((u: { id: string }) => u.id),
        [a.id],
      );
      const byStable = await t.request('GET', '/api/v1/users?filter[referenceId]=stable-b', { as: lm });
      assert.deepEqual(
        byStable.body.data.map((u: { id: string }) => u.id),
        [b.id],
      );
      const none = await t.request('GET', '/api/v1/users?filter[referenceId]=ref-a', { as: other });
      assert.equal(none.body.meta.total, 0);
      const combined = await t.request(
        'GET',
        `/api/v1/users?filter[phoneNumber]=${encodeURIComponent(pa)}&filter[email]=${eb}`,
        { as: lm },
      );
      assert.equal(combined.body.meta.total, 0, 'filters combine with AND');
    });

    test('an empty filter value is 400', async () => {
      const res = await t.request('GET', '/api/v1/users?filter[email]=', { as: lm });
      assert.equal(res.status, 400);
      assert.equal(errorsOf(res)[0]!.source?.parameter, 'filter[email]');
    });
  });

  describe('get', () => {
    test('shows only disabled, profile, updatedAt and createdAt', async () => {
      const u = await createUser(t, m, { firstName: 'Grace' });
      const res = await t.request('GET', `/api/v1/users/${u.id}`, { as: m });
      assert.equal(res.status, 200);
      assert.deepEqual(Object.keys(res.body.data.attributes).sort(), ['createdAt', 'disabled', 'profile', 'updatedAt']);
      assert.equal(res.body.data.attributes.profile.firstName, 'Grace');
      assert.equal(res.body.data.links.self, `http://api.test/api/v1/users/${u.id}`);
    });

    test("unknown users and another merchant's users are 404 UserNotFound", async () => {
      const u = await createUser(t, m);
      for (const [as, id] of [
        [m, '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'],
        [other, u.id],
      ] as const) {
        const res = await t.request('GET', `/api/v1/users/${id}`, { as });
        assert.equal(res.status, 404);
        assert.equal(errorsOf(res)[0]!.code, 'UserNotFound');
      }
    });
  });

  describe('attached profile', () => {
    test('PATCH by user id sets the merchant fields and returns the AttachedProfile', async () => {
      const u = await createUser(t, m);
      t.clock.advance(5000);
      const res = await t.request('PATCH', `/api/v1/users/${u.id}/attached-profile`, {
        as: m,
        body: profileBody({ referenceId: `r-${u.id}`, email: 'Shop.Copy@Example.com', phoneNumber: '+442071838750' }),
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.type, 'AttachedProfile');
      assert.equal(res.body.data.id, u.id);
      assert.deepEqual(res.body.data.attributes, {
        referenceId: `r-${u.id}`,
        effectiveReferenceId: `r-${u.id}`,
        email: 'shop.copy@example.com',
        phoneNumber: '+442071838750',
        updatedAt: t.clock.now().toISOString(),
      });
    });

    test('the body is accepted without the data wrapper, as the spec samples it', async () => {
      const u = await createUser(t, m);
      const res = await t.request('PATCH', `/api/v1/users/${u.id}/attached-profile`, {
        as: m,
        body: { type: 'AttachedProfile', attributes: { stableReferenceId: `s-${u.id}` } },
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.attributes.effectiveReferenceId, `s-${u.id}`);
      const bad = await t.request('PATCH', `/api/v1/users/${u.id}/attached-profile`, {
        as: m,
        body: { type: 'AttachedProfile', attributes: { email: 'nope' } },
      });
      assert.equal(bad.status, 400);
      assert.equal(errorsOf(bad)[0]!.source?.pointer, '/attributes/email', 'pointers follow the shape that was sent');
    });

    test('userReference resolves a referenceId or stableReferenceId; effectiveReferenceId prefers the stable one', async () => {
      const u = await createUser(t, m);
      await t.request('PATCH', `/api/v1/users/${u.id}/attached-profile`, {
        as: m,
        body: profileBody({ referenceId: `ref-${u.id}` }),
      });
      const viaRef = await t.request('PATCH', `/api/v1/users/ref-${u.id}/attached-profile`, {
        as: m,
        body: profileBody({ stableReferenceId: `stable-${u.id}` }),
      });
      assert.equal(viaRef.status, 200);
      assert.equal(viaRef.body.data.attributes.effectiveReferenceId, `stable-${u.id}`);
      const viaStable = await t.request('PATCH', `/api/v1/users/stable-${u.id}/attached-profile`, {
        as: m,
        body: profileBody({ email: 'z@example.com' }),
      });
      assert.equal(viaStable.status, 200);
      assert.equal(viaStable.body.data.id, u.id);
    });

    test('reference ids are immutable once set (400 ValidationError); setting the same value is fine', async () => {
      const u = await createUser(t, m);
      await t.request('PATCH', `/api/v1/users/${u.id}/attached-profile`, {
        as: m,
        body: profileBody({ referenceId: `imm-${u.id}`, stableReferenceId: `imms-${u.id}` }),
      });
      for (const field of ['referenceId', 'stableReferenceId']) {
        const res = await t.request('PATCH', `/api/v1/users/${u.id}/attached-profile`, {
          as: m,
          body: profileBody({ [field]: 'changed' }),
        });
        assert.equal(res.status, 400, field);
        assert.equal(errorsOf(res)[0]!.code, 'ValidationError');
        assert.equal(errorsOf(res)[0]!.source?.pointer, `/data/attributes/${field}`);
      }
      const same = await t.request('PATCH', `/api/v1/users/${u.id}/attached-profile`, {
        as: m,
        body: profileBody({ referenceId: `imm-${u.id}` }),
      });
      assert.equal(same.status, 200);
    });

    test('a reference id another user holds (in either column) is 409 ReferenceIdTaken', async () => {
      const a = await createUser(t, m);
      const b = await createUser(t, m);
      await t.request('PATCH', `/api/v1/users/${a.id}/attached-profile`, {
        as: m,
        body: profileBody({ referenceId: `taken-${a.id}` }),
      });
      for (const field of ['referenceId', 'stableReferenceId']) {
        const res = await t.request('PATCH', `/api/v1/users/${b.id}/attached-profile`, {
          as: m,
          body: profileBody({ [field]: `taken-${a.id}` }),
        });
        assert.equal(res.status, 409, field);
        assert.equal(errorsOf(res)[0]!.code, 'ReferenceIdTaken');
        assert.equal(errorsOf(res)[0]!.meta.existingId, a.id, 'the holder of the reference');
        assert.ok(errorsOf(res)[0]!.links!.about!.endsWith(`/api/v1/users/${a.id}`));
      }
      // Another merchant may use the same reference.
      const c = await createUser(t, other);
      const res = await t.request('PATCH', `/api/v1/users/${c.id}/attached-profile`, {
        as: other,
        body: profileBody({ referenceId: `taken-${a.id}` }),
      });
      assert.equal(res.status, 200);
    });

    test('concurrent claims of one reference id: exactly one user gets it', async () => {
      const users = await Promise.all(Array.from({ length: 5 }, () => createUser(t, m)));
      const ref = `race-${users[0]!.id}`;
      const results = await Promise.all(
        users.map((u, i) =>
          t.request('PATCH', `/api/v1/users/${u.id}/attached-profile`, {
            as: m,
            body: profileBody({ [i % 2 ? 'referenceId' : 'stableReferenceId']: ref }),
          }),
        ),
      );
      assert.equal(results.filter((r) => r.status === 200).length, 1);
      assert.equal(results.filter((r) => r.status === 409).length, 4);
    });

    test("an unresolvable or another merchant's user reference is 400 InvalidIdentifier", async () => {
      const u = await createUser(t, m);
      await t.request('PATCH', `/api/v1/users/${u.id}/attached-profile`, {
        as: m,
        body: profileBody({ referenceId: `mine-${u.id}` }),
      });
      for (const [as, ref] of [
        [m, 'nobody'],
        [m, '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'],
        [other, u.id],
        [other, `mine-${u.id}`],
      ] as const) {
        const res = await t.request('PATCH', `/api/v1/users/${ref}/attached-profile`, {
          as,
          body: profileBody({ email: 'x@example.com' }),
        });
        assert.equal(res.status, 400, ref);
        assert.equal(errorsOf(res)[0]!.code, 'InvalidIdentifier');
        assert.equal(errorsOf(res)[0]!.title, 'UserValidationException');
      }
    });

    test('bad bodies: no attributes, unknown fields, bad formats', async () => {
      const u = await createUser(t, m);
      const cases: [unknown, string][] = [
        [profileBody({}), '/data/attributes'],
        [profileBody({ nickname: 'x' }), '/data/attributes/nickname'],
        [profileBody({ phoneNumber: '555' }), '/data/attributes/phoneNumber'],
        [profileBody({ referenceId: '' }), '/data/attributes/referenceId'],
        [profileBody({ referenceId: ' padded ' }), '/data/attributes/referenceId'],
        [profileBody({ referenceId: 'x'.repeat(256) }), '/data/attributes/referenceId'],
        [{ data: { type: 'User', attributes: { email: 'a@b.co' } } }, '/data/type'],
      ];
      for (const [b, pointer] of cases) {
        const res = await t.request('PATCH', `/api/v1/users/${u.id}/attached-profile`, { as: m, body: b });
        assert.equal(res.status, 400, JSON.stringify(b));
        assert.ok(
          errorsOf(res).some((e) => e.source?.pointer === pointer),
          `${JSON.stringify(b)} → ${res.raw}`,
        );
      }
    });
  });
});
