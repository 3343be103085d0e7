// The JSON:API wire: media types, envelopes, error objects, request ids, 404/405, trailing
// slashes, paging and strict query validation (spec "Conventions", docs/adr/0002-wire-conventions.md).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, createUser, errorsOf, phone, type Merchant, type TestApp } from '../test/harness.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const userBody = (attributes: Record<string, unknown> = {}) => ({
  data: { type: 'User', attributes: { phoneNumber: phone(), ...attributes } },
});

describe('JSON:API wire', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  describe('media types', () => {
    test('responses are application/vnd.api+json with no parameters', async () => {
      const ok = await t.request('GET', '/api/v1/users', { as: m });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers['content-type'], 'application/vnd.api+json');
      const err = await t.request('GET', '/api/v1/users');
      assert.equal(err.headers['content-type'], 'application/vnd.api+json');
    });

    test('application/vnd.api+json and application/json (charset=utf-8) bodies are accepted', async () => {
      for (const ct of [
        'application/vnd.api+json',
        'application/json',
        'application/json; charset=utf-8',
        'application/JSON;charset=UTF-8',
        'application/vnd.api+json; ext="https://example.com/ext"',
        'application/vnd.api+json;profile="https://example.com/p"',
      ]) {
        const res = await t.request('POST', '/api/v1/users', {
          as: m,
          headers: { 'content-type': ct },
          body: userBody(),
        });
        assert.equal(res.status, 201, `${ct}: ${res.raw}`);
      }
    });

    test('a JSON:API body with a parameter other than ext/profile is 415', async () => {
      for (const ct of ['application/vnd.api+json; charset=utf-8', 'application/vnd.api+json; version=1']) {
        const res = await t.request('POST', '/api/v1/users', {
          as: m,
          headers: { 'content-type': ct },
          body: userBody(),
        });
        assert.equal(res.status, 415, ct);
        const [e] = errorsOf(res);
        assert.equal(e!.code, 'UnsupportedMediaType');
        assert.equal(e!.source?.header, 'Content-Type');
      }
    });

    test('other body types, other charsets and a body without a type are 415', async () => {
      for (const ct of [
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/json; charset=latin1',
        'multipart/form-data; boundary=x',
        'garbage',
      ]) {
        const res = await t.request('POST', '/api/v1/users', {
          as: m,
          headers: { 'content-type': ct },
          rawBody: JSON.stringify(userBody()),
        });
        assert.equal(res.status, 415, ct);
        assert.equal(errorsOf(res)[0]!.code, 'UnsupportedMediaType');
      }
      const res = await t.api.inject({
        method: 'POST',
        url: '/api/v1/users',
        headers: m.headers,
        payload: Buffer.from(JSON.stringify(userBody())),
      });
      assert.equal(res.statusCode, 415);
    });

    test('no user is created by a refused request', async () => {
      const p = phone();
      await t.request('POST', '/api/v1/users', {
        as: m,
        headers: { 'content-type': 'text/plain' },
        rawBody: JSON.stringify(userBody({ phoneNumber: p })),
      });
      const list = await t.request('GET', `/api/v1/users?filter[phoneNumber]=${encodeURIComponent(p)}`, { as: m });
      assert.equal(list.body.meta.total, 0);
    });
  });

  describe('error objects', () => {
    test('carry status, id, code, title, detail, source and meta {environment, timestamp, path}', async () => {
      const res = await t.request('POST', '/api/v1/users/?x=1', {
        as: m,
        body: { data: { type: 'User', attributes: { phoneNumber: 'nope' } } },
      });
      assert.equal(res.status, 400);
      assert.deepEqual(Object.keys(res.body), ['errors']);
      const [e] = errorsOf(res);
      assert.equal(e!.status, '400');
      assert.match(e!.id, UUID);
      assert.equal(e!.code, 'ValidationError');
      assert.equal(typeof e!.title, 'string');
      assert.match(e!.detail, /phoneNumber/);
      assert.deepEqual(e!.source, { pointer: '/data/attributes/phoneNumber' });
      assert.equal(e!.meta.environment, 'sandbox');
      assert.equal(e!.meta.timestamp, t.clock.now().toISOString());
      assert.equal(e!.meta.path, '/api/v1/users/');
    });

    test('every identified problem is listed, each with its pointer', async () => {
      const res = await t.request('POST', '/api/v1/users', {
        as: m,
        body: {
          data: {
            type: 'User',
            attributes: { email: 'not-an-email', phoneNumber: '555', firstName: 42, shoeSize: 11 },
          },
        },
      });
      assert.equal(res.status, 400);
      const pointers = errorsOf(res)
        .map((e) => e.source?.pointer)
        .sort();
      assert.deepEqual(pointers, [
        '/data/attributes/email',
        '/data/attributes/firstName',
        '/data/attributes/phoneNumber',
        '/data/attributes/shoeSize',
      ]);
      assert.ok(errorsOf(res).every((e) => e.code === 'ValidationError'));
    });

    test('unknown members anywhere in the document are rejected', async () => {
      const extraData = await t.request('POST', '/api/v1/users', {
        as: m,
        body: { data: { ...userBody().data, relationships: {} } },
      });
      assert.equal(errorsOf(extraData)[0]!.source?.pointer, '/data/relationships');
      // (Top-level jsonapi, meta and links are JSON:API's and ignored: src/http/jsonapi-request.test.ts.)
      const extraTop = await t.request('POST', '/api/v1/users', { as: m, body: { ...userBody(), included: [] } });
      assert.equal(errorsOf(extraTop)[0]!.source?.pointer, '/included');
    });

    test('a wrong resource type is a validation error at /data/type', async () => {
      const res = await t.request('POST', '/api/v1/users', {
        as: m,
        body: { data: { type: 'Wallet', attributes: { phoneNumber: phone() } } },
      });
      assert.equal(res.status, 400);
      assert.equal(errorsOf(res)[0]!.source?.pointer, '/data/type');
    });

    test('malformed JSON, empty bodies and non-object documents are 400, never 500', async () => {
      const cases: [string | undefined, string][] = [
        ['{"data":', 'truncated'],
        ['', 'empty'],
        ['null', 'null'],
        ['[]', 'array'],
        ['42', 'number'],
        ['"x"', 'string'],
        ['{"data":[]}', 'data array'],
        ['{"data":{"type":"User","attributes":null}}', 'null attributes'],
        ['{"__proto__":{"admin":true},"data":{}}', 'prototype poisoning'],
        ['{"constructor":{"prototype":{"x":1}}}', 'constructor poisoning'],
      ];
      for (const [raw, label] of cases) {
        const res = await t.request('POST', '/api/v1/users', {
          as: m,
          headers: { 'content-type': 'application/vnd.api+json' },
          rawBody: raw,
        });
        assert.equal(res.status, 400, `${label}: ${res.raw}`);
        assert.equal(errorsOf(res)[0]!.code, 'ValidationError', label);
      }
    });

    test('a body over the size limit is 413', async () => {
      const big = JSON.stringify(userBody({ firstName: 'x'.repeat(300 * 1024) }));
      const res = await t.request('POST', '/api/v1/users', {
        as: m,
        rawBody: big,
        headers: { 'content-type': 'application/vnd.api+json' },
      });
      assert.equal(res.status, 413);
      assert.equal(errorsOf(res)[0]!.code, 'PayloadTooLarge');
    });

    test('strings are not coerced into other types in bodies', async () => {
      const res = await t.request('POST', '/api/v1/users', {
        as: m,
        body: { data: { type: 'User', attributes: { phoneNumber: 14155550123 } } },
      });
      assert.equal(res.status, 400);
      assert.match(errorsOf(res)[0]!.detail, /must be a string/);
    });
  });

  describe('request ids', () => {
    test('every response has x-request-id: success, errors, 404, 405, 415', async () => {
      const responses = await Promise.all([
        t.request('GET', '/api/v1/users', { as: m }),
        t.request('GET', '/api/v1/users'),
        t.request('GET', '/api/v1/nothing-here', { as: m }),
        t.request('PUT', '/api/v1/users', { as: m }),
        t.request('POST', '/api/v1/users', { as: m, headers: { 'content-type': 'text/plain' }, rawBody: 'x' }),
        t.request('GET', '/health'),
      ]);
      const ids = responses.map((r) => r.headers['x-request-id']);
      for (const id of ids) assert.match(String(id), UUID);
      assert.equal(new Set(ids).size, ids.length, 'ids are unique');
    });

    test("a caller's safe request id is echoed; an unsafe one is replaced", async () => {
      const kept = await t.request('GET', '/api/v1/users', { as: m, headers: { 'x-request-id': 'req_abc-123.x:y' } });
      assert.equal(kept.headers['x-request-id'], 'req_abc-123.x:y');
      const replaced = await t.request('GET', '/api/v1/users', {
        as: m,
        headers: { 'x-request-id': 'bad id\twith "quotes"' },
      });
      assert.match(String(replaced.headers['x-request-id']), UUID);
    });
    test("every error's id is the response's x-request-id", async () => {
      const CALLER_ID = '0192d3f4-5a6b-7c8d-9e0f-a1b2c3d4e5f6';
      const responses = await Promise.all([
        t.request('GET', '/api/v1/users'),
        t.request('GET', '/api/v1/nothing-here', { as: m }),
        t.request('PUT', '/api/v1/users', { as: m }),
        // Two errors in one document: both carry the request's id.
        t.request('POST', '/api/v1/users', { as: m, body: { data: { type: 'User', attributes: { a: 1, b: 2 } } } }),
        t.request('GET', '/api/v1/nothing', { as: m, headers: { 'x-request-id': CALLER_ID } }),
      ]);
      for (const res of responses) {
        assert.ok(res.status >= 400, res.raw);
        const header = res.headers['x-request-id'];
        assert.ok(header);
        const ids = errorsOf(res).map((e) => e.id);
        assert.ok(ids.length > 0);
        for (const id of ids) assert.equal(id, header, res.raw);
      }
      assert.ok(errorsOf(responses[3]!).length > 1, responses[3]!.raw);
      assert.equal(errorsOf(responses[4]!)[0]!.id, CALLER_ID);
      // The spec types an error's id as a UUID: a caller's request id that is not one stays in
      // the header, and the error gets an id of its own.
      const ticket = await t.request('GET', '/api/v1/nothing', {
        as: m,
        headers: { 'x-request-id': 'support-ticket-42' },
      });
      assert.equal(ticket.headers['x-request-id'], 'support-ticket-42');
      assert.match(errorsOf(ticket)[0]!.id, UUID);
    });
  });

  describe('routing', () => {
    test('an unknown path is a JSON:API 404 NotFound', async () => {
      const res = await t.request('GET', '/api/v1/unicorns', { as: m });
      assert.equal(res.status, 404);
      assert.equal(errorsOf(res)[0]!.code, 'NotFound');
      assert.equal(errorsOf(res)[0]!.meta.path, '/api/v1/unicorns');
    });

    test('a wrong method is 405 MethodNotAllowed with Allow', async () => {
      const res = await t.request('DELETE', '/api/v1/users', { as: m });
      assert.equal(res.status, 405);
      assert.equal(errorsOf(res)[0]!.code, 'MethodNotAllowed');
      assert.equal(res.headers.allow, 'GET, POST');
      const user = await createUser(t, m);
      const put = await t.request('PUT', `/api/v1/users/${user.id}/`, { as: m });
      assert.equal(put.status, 405);
      assert.equal(put.headers.allow, 'GET');
    });

    test('paths with and without a trailing slash are the same', async () => {
      const user = await createUser(t, m);
      const a = await t.request('GET', `/api/v1/users/${user.id}`, { as: m });
      const b = await t.request('GET', `/api/v1/users/${user.id}/`, { as: m });
      assert.equal(a.status, 200);
      assert.deepEqual(a.body, b.body);
      const created = await t.request('POST', '/api/v1/users/', { as: m, body: userBody() });
      assert.equal(created.status, 201);
    });

    test('a malformed id in the path is 400 BadRequest naming the parameter', async () => {
      const res = await t.request('GET', '/api/v1/users/12345', { as: m });
      assert.equal(res.status, 400);
      const [e] = errorsOf(res);
      assert.equal(e!.code, 'BadRequest');
      assert.equal(e!.source?.parameter, 'userId');
    });

    test('/health answers on every listener without auth', async () => {
      for (const app of [t.api, t.admin, t.card, t.pay]) {
        const res = await app.inject({ method: 'GET', url: '/health' });
        assert.equal(res.statusCode, 200);
        assert.deepEqual(res.json(), { status: 'ok' });
      }
    });
  });

  describe('queries and paging', () => {
    let pm: Merchant;
    before(async () => {
      pm = await t.createMerchant();
      for (let i = 0; i < 13; i++) {
        await createUser(t, pm);
        t.clock.advance(1000);
      }
    });

    test('default page is 10 with meta {total, limit, offset} and links', async () => {
      const res = await t.request('GET', '/api/v1/users', { as: pm });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.length, 10);
      assert.deepEqual(res.body.meta, { total: 13, limit: 10, offset: 0 });
      assert.equal(res.body.links.self, 'http://api.test/api/v1/users?page[limit]=10&page[offset]=0');
      assert.equal(res.body.links.first, 'http://api.test/api/v1/users?page[limit]=10&page[offset]=0');
      assert.equal(res.body.links.prev, null);
      assert.equal(res.body.links.next, 'http://api.test/api/v1/users?page[limit]=10&page[offset]=10');
    });

    test('pages walk the whole list without gaps or repeats, newest first', async () => {
      const seen: string[] = [];
      let url: string | null = '/api/v1/users?page[limit]=4';
      while (url) {
        const res: { status: number; body: any } = await t.request('GET', url.replace('http://api.test', ''), {
          as: pm,
        });
        assert.equal(res.status, 200);
        seen.push(...res.body.data.map((u: { id: string }) => u.id));
        url = res.body.links.next;
      }
      assert.equal(seen.length, 13);
      assert.equal(new Set(seen).size, 13);
      const created = await Promise.all(seen.map((id) => t.request('GET', `/api/v1/users/${id}`, { as: pm })));
      const times = created.map((r) => r.body.data.attributes.createdAt);
      assert.deepEqual(times, [...times].sort().reverse());
    });

    test('prev links step back and stop at the first page', async () => {
      const res = await t.request('GET', '/api/v1/users?page[limit]=5&page[offset]=7', { as: pm });
      assert.equal(res.body.links.prev, 'http://api.test/api/v1/users?page[limit]=5&page[offset]=2');
      const near = await t.request('GET', '/api/v1/users?page[limit]=5&page[offset]=3', { as: pm });
      assert.equal(near.body.links.prev, 'http://api.test/api/v1/users?page[limit]=5&page[offset]=0');
    });

    test('page[limit] above 50 is capped, not rejected', async () => {
      const res = await t.request('GET', '/api/v1/users?page[limit]=500', { as: pm });
      assert.equal(res.status, 200);
      assert.equal(res.body.meta.limit, 50);
      assert.equal(res.body.data.length, 13);
    });

    test('an offset past the end is an empty page with the true total', async () => {
      const res = await t.request('GET', '/api/v1/users?page[offset]=100', { as: pm });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.data, []);
      assert.equal(res.body.meta.total, 13);
      assert.equal(res.body.links.next, null);
    });

    test('bad paging values are 400 BadRequest naming the parameter', async () => {
      for (const [q, param] of [
        ['page[limit]=0', 'page[limit]'],
        ['page[limit]=-1', 'page[limit]'],
        ['page[limit]=abc', 'page[limit]'],
        ['page[limit]=2.5', 'page[limit]'],
        ['page[offset]=-1', 'page[offset]'],
        ['page[offset]=x', 'page[offset]'],
        ['page[offset]=99999999999999999999', 'page[offset]'],
        ['page[size]=3', 'page[size]'],
      ] as const) {
        const res = await t.request('GET', `/api/v1/users?${q}`, { as: pm });
        assert.equal(res.status, 400, q);
        const [e] = errorsOf(res);
        assert.equal(e!.code, 'BadRequest', q);
        assert.equal(e!.source?.parameter, param, q);
      }
    });

    test('unknown filters, include, sort and other parameters are 400', async () => {
      for (const [q, param] of [
        ['filter[nickname]=x', 'filter[nickname]'],
        ['include=wallets', 'include'],
        ['sort=-createdAt', 'sort'],
        ['foo=bar', 'foo'],
      ] as const) {
        const res = await t.request('GET', `/api/v1/users?${q}`, { as: pm });
        assert.equal(res.status, 400, q);
        assert.equal(errorsOf(res)[0]!.source?.parameter, param, q);
      }
      const user = await createUser(t, pm);
      const res = await t.request('GET', `/api/v1/users/${user.id}?include=wallet`, { as: pm });
      assert.equal(res.status, 400);
      assert.equal(errorsOf(res)[0]!.source?.parameter, 'include');
    });
  });
});
