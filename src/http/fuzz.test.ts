// Hostile input: fast-check builds requests for every operation of the OpenAPI document
// (malformed JSON, wrong media types, wrongly typed and boundary values in the documented
// fields, unknown members, oversized bodies, odd path and query values) and checks that each
// answer comes quickly, is never a 5xx, and is a JSON:API document whose errors are complete.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { createTestApp, type Merchant, type TestApp } from '../test/harness.ts';

const JSONAPI = 'application/vnd.api+json';
// 60 per operation in the suite (about 3,000 requests); FUZZ_RUNS=1000 for a long hunt.
const RUNS = Number(process.env.FUZZ_RUNS ?? 60);

interface Operation {
  method: string;
  path: string;
  params: string[];
  query: string[];
  attributes: string[];
  bodyTypes: string[];
}

const odd = fc.constantFrom(
  '',
  ' ',
  '0',
  '-1',
  '1e309',
  'null',
  'true',
  '[]',
  '{}',
  '%00',
  '\u0000',
  'key\u0000',
  '..',
  '../..',
  '🦄',
  'ñ',
  '\u202e',
  'a'.repeat(300),
  '9'.repeat(40),
  "' or 1=1 --",
);
const pathValue = fc.oneof(fc.uuid(), odd, fc.string({ maxLength: 80 }), fc.integer().map(String));
const scalar = fc.oneof(
  odd,
  fc.string({ maxLength: 40 }),
  fc.integer(),
  fc.constantFrom(0, -1, 1.5, Number.MAX_SAFE_INTEGER, 1e21, -1e21, 2 ** 53 + 2),
  fc.boolean(),
  fc.constant(null),
);
const value = fc.oneof(
  { depthSize: 'small' },
  scalar,
  fc.jsonValue({ maxDepth: 3 }),
  fc.array(scalar, { maxLength: 5 }),
  fc.dictionary(fc.string({ maxLength: 8 }), scalar, { maxKeys: 4 }),
);

function operations(doc: any): Operation[] {
  const resolve = (s: any): any => (s?.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s);
  const out: Operation[] = [];
  for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      const params = (op.parameters ?? []) as { in: string; name: string }[];
      const body = resolve(op.requestBody?.content?.[JSONAPI]?.schema);
      const variants = body?.anyOf ?? (body ? [body] : []);
      const attributes = new Set<string>();
      const bodyTypes = new Set<string>();
      for (const v of variants) {
        const data = resolve(v?.properties?.data);
        for (const k of Object.keys(resolve(data?.properties?.attributes)?.properties ?? {})) attributes.add(k);
        const type = data?.properties?.type;
        for (const t of [type?.const, ...(type?.anyOf ?? []).map((x: any) => x.const), ...(type?.enum ?? [])])
          if (typeof t === 'string') bodyTypes.add(t);
      }
      out.push({
        method: method.toUpperCase(),
        path,
        params: params.filter((p) => p.in === 'path').map((p) => p.name),
        query: params.filter((p) => p.in === 'query').map((p) => p.name),
        attributes: [...attributes],
        bodyTypes: [...bodyTypes],
      });
    }
  }
  return out;
}

function requestFor(op: Operation) {
  const pathArb = fc.tuple(...op.params.map(() => pathValue)).map((values) => {
    let p = op.path;
    op.params.forEach((name, i) => {
      p = p.replace(`{${name}}`, encodeURIComponent(values[i] as string));
    });
    return p;
  });
  const queryArb = fc
    .dictionary(
      fc.oneof(
        fc.constantFrom(...op.query, 'page[limit]', 'include', 'sort', 'filter[nope]'),
        fc.string({ maxLength: 12 }),
      ),
      fc.oneof(odd, fc.string({ maxLength: 20 }), fc.integer().map(String)),
      { maxKeys: 4 },
    )
    .map((q) => {
      const s = new URLSearchParams(q).toString();
      return s ? `?${s}` : '';
    });
  const attributes = fc.dictionary(
    fc.oneof(fc.constantFrom(...op.attributes, 'unknownMember'), fc.string({ maxLength: 10 })),
    value,
    { maxKeys: 6 },
  );
  const type =
    op.bodyTypes.length > 0
      ? fc.oneof(fc.constantFrom(...op.bodyTypes), fc.string({ maxLength: 10 }))
      : fc.string({ maxLength: 10 });
  const bodyArb: fc.Arbitrary<string | undefined> = fc.oneof(
    fc.constant(undefined),
    fc.record({ data: fc.record({ type, attributes }) }).map((b) => JSON.stringify(b)),
    fc.record({ type, attributes }).map((b) => JSON.stringify(b)),
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
    fc.constantFrom(
      '{',
      '[]',
      'null',
      '""',
      '{"data":',
      '\u0000',
      '{"data":{"type":"User","attributes":{"__proto__":{"admin":true}}}}',
      '['.repeat(5_000),
      'x'.repeat(300_000),
    ),
  );
  const contentType = fc.constantFrom(
    JSONAPI,
    'application/json',
    'text/plain',
    `${JSONAPI}; ext="x"`,
    'application/x-www-form-urlencoded',
    undefined,
  );
  return fc.record({ path: pathArb, query: queryArb, body: bodyArb, contentType });
}

describe('hostile input', () => {
  let t: TestApp;
  let m: Merchant;
  let ops: Operation[];
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    ops = operations((await t.api.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json());
  });
  after(() => t.close());

  test('a path segment over 256 characters is 414 UriTooLong, as a JSON:API error (found by this fuzzer)', async () => {
    const res = await t.api.inject({ method: 'GET', url: `/api/v1/users/${'a'.repeat(300)}`, headers: m.headers });
    assert.equal(res.statusCode, 414);
    assert.match(String(res.headers['content-type']), /^application\/vnd\.api\+json/);
    assert.equal(res.json().errors[0].code, 'UriTooLong');
    const bad = await t.api.inject({ method: 'GET', url: '/api/v1/users/%E0%A4%A', headers: m.headers });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().errors[0].code, 'BadRequest');
  });

  test(`every operation answers ${RUNS} generated hostile requests quickly, without a 5xx, with a JSON:API document`, async () => {
    assert.ok(ops.length >= 40, `${ops.length} operations`);
    for (const op of ops) {
      await fc.assert(
        fc.asyncProperty(requestFor(op), async (r) => {
          const headers: Record<string, string> = { ...m.headers };
          if (r.contentType && r.body !== undefined) headers['content-type'] = r.contentType;
          const started = Date.now();
          const res = await t.api.inject({
            method: op.method as 'GET',
            url: r.path + r.query,
            headers,
            ...(r.body !== undefined ? { payload: r.body } : {}),
          });
          const what = `${op.method} ${r.path}${r.query} ${r.contentType} ${r.body?.slice(0, 120)} → ${res.statusCode} ${res.body.slice(0, 300)}`;
          assert.ok(Date.now() - started < 5_000, `slow: ${what}`);
          assert.ok(res.statusCode < 500, what);
          if (res.statusCode === 204) return;
          assert.ok(String(res.headers['content-type']).startsWith(JSONAPI), what);
          const doc = JSON.parse(res.body);
          if (res.statusCode >= 400) {
            assert.ok(Array.isArray(doc.errors) && doc.errors.length > 0, what);
            for (const e of doc.errors) {
              assert.ok(e.status && e.code && e.detail && e.meta?.environment, what);
              assert.ok(!/at .*\.ts:\d+|node_modules/.test(res.body), `a stack trace: ${what}`);
            }
          } else {
            // A JSON:API document: primary data, or only meta (the /api/v1 landing, which a path
            // ending in `..` reaches).
            assert.ok('data' in doc || 'meta' in doc, what);
          }
        }),
        { numRuns: RUNS },
      );
    }
  });
});
