// The served OpenAPI 3.1 document: valid, complete for the routes built, JSON:API media type.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { createTestApp, type TestApp } from '../test/harness.ts';

const JSONAPI = 'application/vnd.api+json';

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: any;
  before(async () => {
    t = await createTestApp();
    const res = await t.request('GET', '/api/v1/openapi.json');
    assert.equal(res.status, 200);
    doc = res.body;
  });
  after(() => t.close());

  test('is served without auth and passes an OpenAPI 3.1 validator', async () => {
    assert.equal(doc.openapi, '3.1.0');
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
    assert.equal(validator.version, '3.1');
  });

  test('covers every /api/v1 and /api/v2 route the server has, and nothing else', async () => {
    const toOpenApi = (url: string) => url.replace(/:([A-Za-z]+)/g, '{$1}').replace(/\/$/, '');
    const registered = new Set(
      t.api.routeTable
        .filter((r) => /^\/api\/v[12]\//.test(r.url) && r.url !== '/api/v1/openapi.json')
        .map((r) => `${r.method} ${toOpenApi(r.url)}`),
    );
    const documented = new Set<string>();
    for (const [path, ops] of Object.entries<Record<string, unknown>>(doc.paths)) {
      for (const method of Object.keys(ops)) documented.add(`${method.toUpperCase()} ${path}`);
    }
    assert.ok(registered.size >= 10);
    assert.deepEqual([...documented].sort(), [...registered].sort());
  });

  test('request bodies and responses use the JSON:API media type; errors use the shared document', async () => {
    for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        if (op.requestBody) assert.ok(op.requestBody.content[JSONAPI], `${method} ${path} body`);
        for (const [status, r] of Object.entries<any>(op.responses)) {
          // No body: 204, and a success documented without content (Accrue's 201 of addSweepstakesResults).
          // A body sent where none is documented fails the live check (src/test/openapi-responses.ts).
          if (status === '204' || (Number(status) < 300 && !r.content)) continue;
          assert.ok(r.content?.[JSONAPI], `${method} ${path} ${status}`);
          if (Number(status) >= 400) assert.equal(r.content[JSONAPI].schema.$ref, '#/components/schemas/ErrorDocument');
        }
        assert.ok(op.operationId, `${method} ${path} has an operationId`);
        assert.ok(op.responses['401'], `${method} ${path} documents 401`);
      }
    }
  });

  test('resources are named components and security names both headers', async () => {
    for (const name of ['User', 'UserSummary', 'AttachedProfile', 'Kyc', 'LinkedAccount', 'Error', 'ErrorDocument']) {
      assert.ok(doc.components.schemas[name], name);
    }
    assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['clientId', 'clientSecret']);
    assert.equal(doc.components.securitySchemes.clientId.name, 'Client-ID');
  });

  test('the client SDK was generated from this document (else: npm run sdk:generate)', async () => {
    const committed = JSON.parse(
      await readFile(new URL('../../packages/client/openapi.json', import.meta.url), 'utf8'),
    );
    const { servers: _servers, ...served } = doc;
    assert.deepEqual(committed, served);
  });

  test("is serialized once: the reference's /docs/json and /docs/yaml are the same document", async () => {
    const again = await t.api.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    assert.equal(again.headers['content-type'], 'application/json; charset=utf-8');
    assert.deepEqual(JSON.parse(again.body), doc);
    const json = await t.api.inject({ method: 'GET', url: '/docs/json' });
    assert.equal(json.statusCode, 200);
    assert.equal(json.body, again.body);
    const yaml = await t.api.inject({ method: 'GET', url: '/docs/yaml' });
    assert.equal(yaml.statusCode, 200);
    assert.match(String(yaml.headers['content-type']), /^application\/x-yaml/);
    assert.match(yaml.body, /^openapi: 3\.1\.0$/m);
  });

  test('/docs renders the reference for people', async () => {
    const res = await t.api.inject({ method: 'GET', url: '/docs' });
    const page =
      res.statusCode === 302 ? await t.api.inject({ method: 'GET', url: res.headers.location as string }) : res;
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /text\/html/);
    assert.match(page.body, /swagger/i);
  });
});
