// Timestamps by integer arithmetic (timestamps.ts): the same strings and Dates as the built-ins,
// and a timestamp read from the database and rendered by the API as Date and toISOString do.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { createTestApp, createUser, type Merchant, type TestApp } from './test/harness.ts';
import { isoTime, isoTimeOrNull, parseTimestamptz } from './timestamps.ts';

/** A deterministic spread of instants (a linear congruential sequence), so a failure repeats. */
function* instants(n: number, from: number, to: number) {
  let x = 12345;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    yield from + Math.floor((x / 2147483648) * (to - from)) + (i % 1000);
  }
}

const YEAR_1000 = Date.UTC(1000, 0, 1);
const YEAR_10000 = 253402300800000;

describe('timestamps', () => {
  test('isoTime is toISOString', () => {
    const edges = [
      0,
      -1,
      1,
      YEAR_1000,
      YEAR_1000 - 1,
      YEAR_10000 - 1,
      YEAR_10000,
      Date.UTC(2000, 1, 29, 23, 59, 59, 999),
      Date.UTC(1900, 2, 1),
      Date.UTC(2100, 1, 28, 12),
      -8.64e15,
      8.64e15,
    ];
    for (const ms of [...edges, ...instants(200_000, YEAR_1000 - 1e11, YEAR_10000 + 1e11)]) {
      const d = new Date(ms);
      assert.equal(isoTime(d), d.toISOString(), String(ms));
    }
    assert.throws(() => isoTime(new Date(Number.NaN)), RangeError);
    assert.equal(isoTimeOrNull(null), null);
    assert.equal(isoTimeOrNull(undefined), null);
  });

  test("parseTimestamptz is new Date() of PostgreSQL's text", () => {
    const fractions = ['', '.1', '.12', '.123', '.1234', '.12345', '.123456', '.999999', '.000001', '.05'];
    let i = 0;
    for (const ms of instants(100_000, YEAR_1000, YEAR_10000)) {
      const iso = new Date(ms).toISOString();
      const text = `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fractions[i++ % fractions.length]}+00`;
      assert.equal(parseTimestamptz(text).getTime(), new Date(text).getTime(), text);
    }
    // Texts outside the fast path: another session time zone, years Date.UTC reads differently, BC, infinity, nonsense.
    for (const text of [
      '2026-01-01 00:00:00+05:30',
      '2026-01-01 00:00:00.5-08',
      '0099-01-01 00:00:00+00',
      '0999-12-31 23:59:59+00',
      '10000-01-01 00:00:00+00',
      '2026-01-01 00:00:00+00 BC',
      'infinity',
      '-infinity',
      '2026-13-01 00:00:00+00',
      '2026-02-30 00:00:00+00',
      '2026-01-01 00:00:00.12a+00',
      'x026-01-01 00:00:00+00',
    ]) {
      assert.ok(Object.is(parseTimestamptz(text).getTime(), new Date(text).getTime()), text);
    }
  });

  describe('through the API', () => {
    let t: TestApp;
    let m: Merchant;
    before(async () => {
      t = await createTestApp();
      m = await t.createMerchant();
    });
    after(() => t.close());

    test("a user's timestamps read from the database render as the database has them, to the millisecond", async () => {
      for (const text of [
        '2024-02-29 23:59:59.999999+00',
        '1999-12-31 23:59:59+00',
        '2038-01-19 03:14:08.5+00',
        '2026-11-28 07:49:28.07+00',
      ]) {
        const u = await createUser(t, m);
        await t.ctx.db.execute(
          sql`update users set created_at = ${text}::timestamptz, updated_at = ${text}::timestamptz where id = ${u.id}`,
        );
        const res = await t.request('GET', `/api/v1/users/${u.id}`, { as: m });
        assert.equal(res.status, 200, res.raw);
        const expected = new Date(text).toISOString();
        assert.equal(res.body.data.attributes.createdAt, expected);
        assert.equal(res.body.data.attributes.updatedAt, expected);
        const list = await t.request('GET', `/api/v1/users?page[limit]=100`, { as: m });
        assert.equal(list.body.data.find((x: { id: string }) => x.id === u.id).attributes.createdAt, expected);
      }
    });
  });
});
