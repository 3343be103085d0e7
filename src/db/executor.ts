// The types of what runs queries, apart from opening the database (open.ts), so that the
// statement helpers open.ts uses can name them without importing it back.
import type { ExtractTablesWithRelations } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';

// Without Drizzle's relational query API (`db.query.<table>`), which nothing here uses: given
// the schema, Drizzle builds a query builder for each of its tables in a dictionary-mode object
// (`--log-maps`: TooManyFastProperties) for every transaction it opens.
type NoSchema = Record<string, never>;
export type Db = PgDatabase<PgQueryResultHKT, NoSchema>;
export type Tx = PgTransaction<PgQueryResultHKT, NoSchema, ExtractTablesWithRelations<NoSchema>>;
/** Anything that runs queries: the database or an open transaction. */
export type Executor = Db | Tx;
