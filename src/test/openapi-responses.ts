// Runs last (all.ts): every response the suite received from the API listener must be one the
// OpenAPI document describes: a status the operation lists, the JSON:API media type, and a body
// that validates against the documented schema. This keeps the reference exact: a route that
// answers something its schema does not say fails here.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { readFileSync, writeFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { ANY_ROUTE, ERROR_CODES_FILE, type ErrorCodeMap } from '../listeners/error-codes.ts';
import { createTestApp, type TestApp } from './harness.ts';
import { recorded } from './responses.ts';

const JSONAPI = 'application/vnd.api+json';
const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

describe('live responses against the OpenAPI document', () => {
  let t: TestApp;
  let doc: any;
  before(async () => {
    t = await createTestApp();
    doc = (await t.api.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
  });
  after(() => t.close());

  test('every response of the suite matches its operation', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: false });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    ajv.addSchema(doc, 'openapi');
    const routes = Object.keys(doc.paths).map((p) => ({
      path: p,
      re: new RegExp(`^${p.replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
    }));
    const problems = new Map<string, string>();
    const codesSeen: ErrorCodeMap = {};
    let checked = 0;
    for (const r of recorded) {
      const pathname = r.url.split('?')[0]!;
      // The most specific template wins (/wallets/barcode/{id} over /wallets/{id}/…).
      const route = routes
        .filter((x) => x.re.test(pathname))
        .sort((a, b) => b.path.split('{').length - a.path.split('{').length || b.path.length - a.path.length)
        .at(-1);
      const op = route && doc.paths[route.path][r.method.toLowerCase()];
      if (!route || !op || pathname === '/api/v1/openapi.json') continue; // 404/405 for routes that do not exist
      checked++;
      const key = `${r.method} ${route.path} ${r.status}`;
      const response = op.responses[String(r.status)];
      if (!response) {
        problems.set(key, `status ${r.status} is not documented (${Object.keys(op.responses).join(', ')})`);
        continue;
      }
      if (r.status >= 400) {
        const op2 = `${r.method} ${route.path}`;
        for (const e of (JSON.parse(r.body) as { errors?: { code?: string }[] }).errors ?? []) {
          if (!e.code) continue;
          const seen = ((codesSeen[op2] ??= {})[String(r.status)] ??= []);
          if (!seen.includes(e.code) && !ANY_ROUTE[String(r.status)]?.includes(e.code)) seen.push(e.code);
          const documented = [...String(response.description).matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1]);
          if (!documented.includes(e.code) && !process.env.UPDATE_ERROR_CODES) {
            problems.set(
              `${key} ${e.code}`,
              'code not listed in the response description (UPDATE_ERROR_CODES=1 npm test updates src/listeners/error-codes.json)',
            );
          }
        }
      }
      if (r.status === 204 || r.body.length === 0) continue;
      if (!response.content?.[JSONAPI]) {
        problems.set(key, 'no JSON:API content documented');
        continue;
      }
      if (!r.contentType?.startsWith(JSONAPI)) problems.set(key, `content-type ${r.contentType}`);
      const pointer = `openapi#/paths/${escape(route.path)}/${r.method.toLowerCase()}/responses/${r.status}/content/${escape(JSONAPI)}/schema`;
      const validate = ajv.getSchema(pointer)!;
      if (!validate(JSON.parse(r.body))) {
        problems.set(key, `${ajv.errorsText(validate.errors)} in ${r.body.slice(0, 300)}`);
      }
    }
    assert.ok(checked > 500, `only ${checked} responses were checked`);
    if (process.env.UPDATE_ERROR_CODES) {
      const file = JSON.parse(readFileSync(ERROR_CODES_FILE, 'utf8')) as ErrorCodeMap;
      for (const [op, byStatus] of Object.entries(codesSeen)) {
        for (const [status, codes] of Object.entries(byStatus)) {
          if (codes.length > 0)
            (file[op] ??= {})[status] = [...new Set([...(file[op]?.[status] ?? []), ...codes])].sort();
        }
      }
      const sorted = Object.fromEntries(
        Object.keys(file)
          .sort()
          .map((k) => [k, file[k]]),
      );
      writeFileSync(ERROR_CODES_FILE, `${JSON.stringify(sorted, null, 2)}\n`);
    }
    assert.deepEqual(
      [...problems].map(([k, v]) => `${k}: ${v}`),
      [],
    );
  });
});
