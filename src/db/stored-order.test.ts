// The tables whose list pages countedPage reads (db/list-counts.ts) declare their columns in the
// order the database stores them, with no dropped column between: a page that selects its
// table's columns as stored is read row by row as it is stored, where any other order makes
// PostgreSQL rebuild every row the page's offset walks past (twice the time of a page at
// `page[offset]=1000`). A column added by a migration goes last in the table; its declaration
// in schema.ts goes last too.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { getTableConfig, type PgTable } from 'drizzle-orm/pg-core';
import { testDatabase } from '../test/harness.ts';
import { rowsOf } from './open.ts';
import { events, paymentIntents, payments, transactions, users, wallets } from './schema.ts';

const PAGED: PgTable[] = [users, wallets, transactions, paymentIntents, payments, events];

describe('stored column order of the listed tables', () => {
  for (const table of PAGED) {
    const { name, columns } = getTableConfig(table);
    test(`${name}: declared as stored`, async () => {
      const { database } = await testDatabase();
      const stored = rowsOf<{ attname: string; attisdropped: boolean }>(
        await database.db.execute(
          sql`select attname, attisdropped from pg_attribute where attrelid = ${name}::regclass and attnum > 0 order by attnum`,
        ),
      ).map((a) => (a.attisdropped ? '(dropped)' : a.attname));
      assert.deepEqual(
        columns.map((c) => c.name),
        stored,
      );
    });
  }
});
