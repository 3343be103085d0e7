// What the request log records and how its batches are written: every row is valid for
// PostgreSQL whatever a request carried (lone surrogates, a character pair cut at the body's
// limit), a row PostgreSQL refuses is dropped alone and counted, the rows of a database that is
// away wait for the next flush, and no log line carries what the rows held. And the redaction
// of bodies: card numbers in any form, secrets and identity data under any spelling of their keys.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../db/open.ts';
import { registry } from '../../observability/metrics.ts';
import { withRefusal } from '../../test/faults.ts';
import { createTestApp, JSONAPI, logCapture, phone, type Merchant, type TestApp } from '../../test/harness.ts';
import { BODY_LIMIT, redactBody } from './record.ts';

interface Logged {
  path: string;
  status: number;
  idempotency_key: string | null;
  body: string | null;
}

describe('request log recording', () => {
  let t: TestApp;
  let a: Merchant;
  let b: Merchant;
  const { stream, lines } = logCapture();
  before(async () => {
    t = await createTestApp({ logStream: stream });
    a = await t.createMerchant();
    b = await t.createMerchant();
  });
  after(() => t.close());

  const logged = async (m: Merchant) =>
    rowsOf<Logged>(
      await t.ctx.db.execute(
        sql`select path, status, idempotency_key, body from request_log where client_id = ${m.clientId} order by id`,
      ),
    );
  const flush = () => t.ctx.jobs.runOnce('request-log-flush');
  const dropped = async (reason: string) =>
    (await registry.getSingleMetric('coffer_request_log_dropped_total')?.get())?.values.find(
      (v) => v.labels.reason === reason,
    )?.value ?? 0;
  /** Another merchant's request in the same batch: a user with this e-mail, which no log line may show. */
  async function otherMerchantsUser(email: string): Promise<void> {
    const res = await t.request('POST', '/api/v1/users', {
      as: b,
      body: { data: { type: 'User', attributes: { phoneNumber: phone(), email } } },
    });
    assert.equal(res.status, 201, res.raw);
  }
  const assertNotLogged = (value: string) =>
    assert.ok(!lines.some((l) => l.includes(value)), `${value} reached the log: ${lines.join('\n')}`);

  test("a lone surrogate in a request is stored as U+FFFD and loses no other merchant's row", async () => {
    const marker = randomUUID();
    // Valid JSON; the parser may refuse it (400), and the request is recorded either way.
    const res = await t.request('POST', '/api/v1/users', {
      as: a,
      headers: { 'content-type': JSONAPI },
      rawBody: `{"data":{"type":"User","attributes":{"phoneNumber":"${phone()}","idempotencyKey":"\\ud800${marker}","note\\udc00":"\\udbff"}}}`,
    });
    assert.equal(res.status, 400, res.raw);
    const email = `lone-${marker}@example.com`;
    await otherMerchantsUser(email);
    await flush();

    const mine = (await logged(a)).filter((r) => r.status === 400 && r.path === '/api/v1/users');
    assert.equal(mine.length, 1, 'the request is recorded');
    const key = mine[0]!.idempotency_key;
    assert.ok(key === null || key === `\ufffd${marker}`, `the key is stored with U+FFFD: ${key}`);
    if (mine[0]!.body !== null) {
      assert.ok(!/\\ud[89a-f]/i.test(mine[0]!.body), 'no escaped surrogate in the body');
      assert.ok(JSON.parse(mine[0]!.body), 'the body is JSON');
    }
    assert.ok(
      (await logged(b)).some((r) => r.body?.includes(email)),
      "the other merchant's request of the same batch is recorded",
    );
    assertNotLogged(email);
  });

  test('a character pair cut at the body limit is stored as U+FFFD', async () => {
    const start = JSON.stringify({ data: { type: 'User', attributes: { note: '' } } }).slice(0, -4);
    // The emoji's first half is the last character kept.
    const note = `${'x'.repeat(BODY_LIMIT - 1 - start.length)}😀 and more`;
    const res = await t.request('POST', '/api/v1/users', {
      as: a,
      body: { data: { type: 'User', attributes: { note } } },
    });
    assert.equal(res.status, 400, res.raw);
    const email = `cut-${randomUUID()}@example.com`;
    await otherMerchantsUser(email);
    await flush();

    const body = (await logged(a)).find((r) => r.body?.includes('xxxx'))?.body;
    assert.ok(body, 'the request is recorded');
    assert.equal(body.length, BODY_LIMIT);
    assert.ok(body.endsWith('x\ufffd'), body.slice(-10));
    assert.ok((await logged(b)).some((r) => r.body?.includes(email)));
    assertNotLogged(email);
  });

  test('a row PostgreSQL refuses is dropped alone and counted; the rest of its batch is written, and never logged', async () => {
    const marker = randomUUID();
    assert.equal((await t.request('GET', `/api/v1/users/${marker}`, { as: a })).status, 404);
    assert.equal((await t.request('GET', '/api/v1/users?page[limit]=1', { as: a })).status, 200);
    const email = `refused-${marker}@example.com`;
    await otherMerchantsUser(email);
    const before = await dropped('refused');
    await withRefusal(
      t,
      { table: 'request_log', on: 'insert', when: `new.path = '/api/v1/users/${marker}'`, raise: "errcode = '22023'" },
      flush,
    );

    const mine = (await logged(a)).map((r) => r.path);
    assert.ok(!mine.includes(`/api/v1/users/${marker}`), 'the refused row is not written');
    assert.ok(mine.includes('/api/v1/users'), "the merchant's other row is written");
    assert.ok(
      (await logged(b)).some((r) => r.body?.includes(email)),
      "the other merchant's row is written",
    );
    assert.equal((await dropped('refused')) - before, 1);
    const warning = lines.find((l) => l.includes('PostgreSQL refused request-log rows'));
    assert.ok(warning, 'the refusal is logged');
    assert.match(warning, /"code":"22023"/);
    assertNotLogged(email);
  });

  test("a gift's or a barcode's lookUpId (a bearer secret) is not stored in the path", async () => {
    const secret = `lk${randomUUID().replaceAll('-', '')}`;
    for (const p of [`/api/v1/gifts/${secret}`, `/api/v1/wallets/barcode/${secret}`]) {
      const res = await t.request('GET', p, { as: a });
      assert.ok(res.status >= 400 && res.status < 500, res.raw);
    }
    await flush();
    const paths = (await logged(a)).map((r) => r.path).filter((p) => /gifts|barcode/.test(p));
    assert.deepEqual(paths, ['/api/v1/gifts/[redacted]', '/api/v1/wallets/barcode/[redacted]']);
  });

  test('while the database is away, the rows wait for the next flush; the failure is logged without them', async () => {
    const marker = randomUUID();
    assert.equal((await t.request('GET', `/api/v1/users/${marker}`, { as: a })).status, 404);
    const email = `away-${marker}@example.com`;
    await otherMerchantsUser(email);
    const failuresBefore = lines.filter((l) => l.includes('"job failed"')).length;
    // A connection failure (class 08) for one row fails the batch as a lost connection would.
    await withRefusal(
      t,
      { table: 'request_log', on: 'insert', when: `new.path = '/api/v1/users/${marker}'`, raise: "errcode = '08006'" },
      flush,
    );
    assert.equal(lines.filter((l) => l.includes('"job failed"')).length, failuresBefore + 1, 'the failure is logged');
    assert.ok(!(await logged(b)).some((r) => r.body?.includes(email)), 'nothing of the batch is written yet');

    await flush();
    assert.ok((await logged(a)).some((r) => r.path === `/api/v1/users/${marker}`));
    assert.ok((await logged(b)).some((r) => r.body?.includes(email)));
    assertNotLogged(email);
  });
});

describe('request log redaction', () => {
  const R = '[redacted]';
  const redacted = (value: unknown) => redactBody({ v: value }) as { v: unknown };

  test('NUL is removed and lone surrogates become U+FFFD, in keys and values', () => {
    assert.deepEqual(redactBody({ 'k\u0000\ud800': ['a\u0000b', '\udc00x', '😀'] }), {
      'k\ufffd': ['ab', '\ufffdx', '😀'],
    });
  });

  test('card numbers in any form: separators, full-width digits, split into an array', () => {
    const forms = [
      '4111111111111111',
      '4111 1111 1111 1111',
      '4111-1111-1111-1111',
      '4111.1111.1111.1111',
      '4111_1111_1111_1111',
      '4111/1111/1111/1111',
      '4111  1111  1111  1111',
      '4111\u00a01111\u00a01111\u00a01111',
      '４１１１１１１１１１１１１１１１',
      '４１１１ １１１１ １１１１ １１１１',
      '378282246310005', // 15 digits (Amex)
      '6011 0009 9013 9424',
    ];
    for (const form of forms) {
      assert.equal(redacted(form).v, R, form);
      assert.equal(redacted(`card: ${form}, thanks`).v, `card: ${R}, thanks`, form);
    }
    // Among other numbers in one string.
    assert.equal(redacted('ref 2024/06/01 4111.1111.1111.1111 ok').v, `ref 2024/06/01 ${R} ok`);
    // Split into an array of digit strings, alone or among other members.
    assert.equal(redacted(['4111', '1111', '1111', '1111']).v, R);
    assert.equal(redacted(['４１１１', '1111', '1111', '1111']).v, R);
    assert.deepEqual(redacted(['card', '4111 1111', '1111 1111', 'end']).v, ['card', R, R, 'end']);
  });

  test('what is not a card number is kept', () => {
    for (const kept of [
      '2026-06-01T12:00:00.000Z',
      '+1 415 555 0123',
      'amounts 100, 200, 300',
      '4111.1111.1111.1112', // fails the Luhn check
      '192.168.100.200',
      // Ids whose digits, across their dashes, would pass for a card number.
      '12345678-1234-4123-8123-123456789012',
      'user 586456aa-6542-4576-9001-69a5db514f46 paid',
    ])
      assert.equal(redacted(kept).v, kept, kept);
    assert.deepEqual(redacted(['4111', '1111', '1111', '1112']).v, ['4111', '1111', '1111', '1112']);
    assert.deepEqual(redacted(['2026', '06', '01']).v, ['2026', '06', '01']);
    assert.equal(redacted(2500).v, 2500);
  });

  test('secrets, credentials and identity data under any spelling of their keys', () => {
    const keys = [
      'apiKey',
      'api_key',
      'API-KEY',
      'privateKey',
      'private_key',
      'auth',
      'basicAuth',
      'cookie',
      'Set-Cookie',
      'jwt',
      'idJwt',
      'csc',
      'exp',
      'expMonth',
      'exp_year',
      'expiry',
      'ssn',
      'ssnLast4',
      'ssn_last_4',
      'socialSecurityNumber',
      'ein',
      'nationalId',
      'national_id',
      'passport',
      'passportNumber',
      'dob',
      'birthDate',
      'date_of_birth',
      'credentials',
      'otp',
      'otpCode',
      'card_number',
      'CardNumber',
      'cvv',
      'accountNumber',
      'routing_number',
      'taxId',
      'pin',
      'clientSecret',
      'password',
      'accessToken',
      'Authorization',
    ];
    for (const key of keys) assert.deepEqual(redactBody({ [key]: 'value-1' }), { [key]: R }, key);
    for (const key of ['author', 'expected', 'experience', 'pinned', 'classname', 'email', 'idempotencyKey', 'type'])
      assert.deepEqual(redactBody({ [key]: 'value-1' }), { [key]: 'value-1' }, key);
  });
});
