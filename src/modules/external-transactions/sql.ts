// Every query on external transactions, scoped by client_id.
import { and, desc, eq, inArray, or, sql, type SQL } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import { pagedRows } from '../../db/paged.ts';
import { externalTransactions, users } from '../../db/schema.ts';
import type { Page } from '../../http/paging.ts';

export type ExternalTransactionRow = typeof externalTransactions.$inferSelect;

/** Inserts the rows whose (type, source id) the merchant has not recorded yet; returns those inserted. */
export async function insertNew(
  db: Executor,
  rows: (typeof externalTransactions.$inferInsert)[],
): Promise<ExternalTransactionRow[]> {
  return db.insert(externalTransactions).values(rows).onConflictDoNothing().returning();
}

/** The merchant's recorded transactions with these (type, source id) pairs. */
export async function findBySource(
  db: Executor,
  clientId: string,
  keys: { type: string; sourceId: string }[],
): Promise<ExternalTransactionRow[]> {
  if (keys.length === 0) return [];
  return db
    .select()
    .from(externalTransactions)
    .where(
      and(
        eq(externalTransactions.clientId, clientId),
        or(
          ...keys.map((k) => and(eq(externalTransactions.type, k.type), eq(externalTransactions.sourceId, k.sourceId))),
        ),
      ),
    );
}

export async function findExternalTransaction(
  db: Executor,
  clientId: string,
  id: string,
): Promise<ExternalTransactionRow | undefined> {
  const [row] = await db
    .select()
    .from(externalTransactions)
    .where(and(eq(externalTransactions.clientId, clientId), eq(externalTransactions.id, id)));
  return row;
}

/** The types of the merchant's recorded transactions among `ids`. */
export async function typesOf(db: Executor, clientId: string, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .select({ id: externalTransactions.id, type: externalTransactions.type })
    .from(externalTransactions)
    .where(and(eq(externalTransactions.clientId, clientId), inArray(externalTransactions.id, ids)));
  return new Map(rows.map((r) => [r.id, r.type]));
}

/** The merchant's users any of `refs` could name: by id (the UUID-shaped ones) or by either reference id. */
export async function usersNamed(db: Executor, clientId: string, refs: { ids: string[]; references: string[] }) {
  const conds: SQL[] = [];
  if (refs.ids.length > 0) conds.push(inArray(users.id, refs.ids));
  if (refs.references.length > 0)
    conds.push(inArray(users.referenceId, refs.references), inArray(users.stableReferenceId, refs.references));
  if (conds.length === 0) return [];
  return db
    .select({ id: users.id, referenceId: users.referenceId, stableReferenceId: users.stableReferenceId })
    .from(users)
    .where(and(eq(users.clientId, clientId), or(...conds)));
}

export interface ExternalTransactionFilters {
  phoneNumber?: string;
  userId?: string;
  sourceId?: string;
}

/** Newest first. */
export async function listExternalTransactionRows(
  db: Executor,
  clientId: string,
  f: ExternalTransactionFilters,
  page: Page,
) {
  const conds: SQL[] = [eq(externalTransactions.clientId, clientId)];
  if (f.userId !== undefined) conds.push(eq(externalTransactions.userId, f.userId));
  if (f.sourceId !== undefined) conds.push(eq(externalTransactions.sourceId, f.sourceId));
  if (f.phoneNumber !== undefined) {
    conds.push(
      sql`${externalTransactions.userId} in (select ${users.id} from ${users} where ${users.clientId} = ${clientId} and ${users.phoneNumber} = ${f.phoneNumber})`,
    );
  }
  return pagedRows(
    db,
    externalTransactions,
    and(...conds),
    [desc(externalTransactions.createdAt), desc(externalTransactions.id)],
    page,
  );
}
