// Deeply nested and oversized JSON: every request body is refused past MAX_JSON_DEPTH levels
// (400 before any schema, fingerprint or database sees it), and the authorize's free-form
// meta.processor is limited in size. Never a 500.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { MAX_JSON_DEPTH } from './content-type.ts';
import { createTestApp, errorsOf, JSONAPI, type Merchant, type TestApp } from '../test/harness.ts';
import { fundedWallet } from '../test/money.ts';

/** `{"a":{"a":…1…}}` with `levels` objects. */
const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

describe('JSON depth and size limits', () => {
  let t: TestApp;
  let m: Merchant;
  let walletId: string;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
    walletId = (await fundedWallet(t, m, 1_000_000)).wallet.id;
  });
  after(() => t.close());

  const intent = async () => {
    const res = await t.request('POST', '/api/v1/payment-intents', {
      as: m,
      body: { data: { type: 'CreatePaymentIntent', attributes: { amount: 100, walletId } } },
    });
    assert.equal(res.status, 201, res.raw);
    return res.body.data.id as string;
  };
  const authorize = async (processor: string) =>
    t.request('POST', `/api/v1/payment-intents/${await intent()}/authorize`, {
      as: m,
      headers: { 'content-type': JSONAPI },
      rawBody: `{"data":{"type":"AuthorizePaymentIntent","attributes":{"amount":100,"idempotencyKey":"${randomUUID()}","meta":{"processor":${processor}}}}}`,
    });

  test('an authorize whose meta.processor is nested 5,000 deep is 400 ValidationError, not 500', async () => {
    const res = await authorize(`{"x":${nested(5_000)}}`);
    assert.equal(res.status, 400, res.raw);
    const [e] = errorsOf(res);
    assert.equal(e!.code, 'ValidationError');
    assert.equal(e!.source?.pointer, '');
    assert.match(e!.detail, new RegExp(`more than ${MAX_JSON_DEPTH} levels`));
  });

  test('every body on every listener has the limit; the limit itself is accepted', async () => {
    // The body's own levels: the document, data, attributes, then meta.processor's.
    const atLimit = await authorize(`{"x":${nested(MAX_JSON_DEPTH - 5)}}`);
    assert.equal(atLimit.status, 201, atLimit.raw);
    const over = await authorize(`{"x":${nested(MAX_JSON_DEPTH - 4)}}`);
    assert.equal(over.status, 400, over.raw);

    const deepUser = await t.request('POST', '/api/v1/users', {
      as: m,
      headers: { 'content-type': JSONAPI },
      rawBody: `{"data":${nested(200)}}`,
    });
    assert.equal(deepUser.status, 400);
    assert.equal(errorsOf(deepUser)[0]!.code, 'ValidationError');
    const deepAdmin = await t.adminRequest('POST', '/admin/v1/clients', {
      headers: { 'content-type': JSONAPI },
      rawBody: `{"data":${nested(200)}}`,
    });
    assert.equal(deepAdmin.status, 400, deepAdmin.raw);
    const deepWidget = await t.pay.inject({
      method: 'POST',
      url: '/_/api/user-check',
      headers: { 'content-type': 'application/json' },
      payload: `{"phoneNumber":${nested(5_000)}}`,
    });
    assert.equal(deepWidget.statusCode, 400, deepWidget.body);
    assert.match(deepWidget.json().errors[0].detail, /levels deep/);
    // Brackets inside strings are text, not nesting.
    const brackets = await t.request('POST', '/api/v1/users', {
      as: m,
      body: {
        data: {
          type: 'User',
          attributes: { phoneNumber: '+14155550999', firstName: '{['.repeat(20), lastName: '"\\{' },
        },
      },
    });
    assert.equal(brackets.status, 201, brackets.raw);
  });

  test('meta.processor over 4 KiB is 400 with its pointer; at 4 KiB it is stored', async () => {
    const big = await authorize(JSON.stringify({ blob: 'x'.repeat(4_100) }));
    assert.equal(big.status, 400, big.raw.slice(0, 300));
    const [e] = errorsOf(big);
    assert.equal(e!.code, 'ValidationError');
    assert.equal(e!.source?.pointer, '/data/attributes/meta/processor');
    const fits = await authorize(JSON.stringify({ blob: 'x'.repeat(4_000) }));
    assert.equal(fits.status, 201, fits.raw.slice(0, 300));
  });
});
