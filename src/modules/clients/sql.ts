// Every query on clients and client_secrets.
import { and, asc, count, eq, inArray, isNull } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import { clientSecrets, clients, counterparties } from '../../db/schema.ts';

export type ClientRow = typeof clients.$inferSelect;
export type ClientSecretRow = typeof clientSecrets.$inferSelect;

export async function insertClient(db: Executor, row: typeof clients.$inferInsert): Promise<ClientRow> {
  const [out] = await db.insert(clients).values(row).returning();
  return out!;
}

export async function insertClientSecret(
  db: Executor,
  row: typeof clientSecrets.$inferInsert,
): Promise<ClientSecretRow> {
  const [out] = await db.insert(clientSecrets).values(row).returning();
  return out!;
}

export async function findClient(
  db: Executor,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<ClientRow | undefined> {
  const q = db.select().from(clients).where(eq(clients.id, id));
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  return row;
}

export async function listClientRows(
  db: Executor,
  page: { limit: number; offset: number },
): Promise<{ rows: ClientRow[]; total: number }> {
  const [rows, [totalRow]] = await Promise.all([
    db.select().from(clients).orderBy(asc(clients.createdAt), asc(clients.id)).limit(page.limit).offset(page.offset),
    db.select({ n: count() }).from(clients),
  ]);
  return { rows, total: totalRow?.n ?? 0 };
}

export async function countClients(db: Executor): Promise<number> {
  const [row] = await db.select({ n: count() }).from(clients);
  return row?.n ?? 0;
}

export async function updateClientRow(
  db: Executor,
  id: string,
  patch: Partial<typeof clients.$inferInsert>,
): Promise<ClientRow | undefined> {
  const [row] = await db.update(clients).set(patch).where(eq(clients.id, id)).returning();
  return row;
}

export async function listSecretRows(db: Executor, clientIds: string[]): Promise<ClientSecretRow[]> {
  if (clientIds.length === 0) return [];
  return db
    .select()
    .from(clientSecrets)
    .where(inArray(clientSecrets.clientId, clientIds))
    .orderBy(asc(clientSecrets.createdAt));
}

export async function deleteSecretRow(db: Executor, clientId: string, secretId: string): Promise<boolean> {
  const rows = await db
    .delete(clientSecrets)
    .where(and(eq(clientSecrets.clientId, clientId), eq(clientSecrets.id, secretId)))
    .returning({ id: clientSecrets.id });
  return rows.length > 0;
}

/** The id of a client's secret by its hash (a secret already authenticated: the console binds its session to it). */
export async function findSecretId(db: Executor, clientId: string, hash: Buffer): Promise<string | undefined> {
  const [row] = await db
    .select({ id: clientSecrets.id })
    .from(clientSecrets)
    .where(and(eq(clientSecrets.clientId, clientId), eq(clientSecrets.hash, hash)));
  return row?.id;
}

/** The authentication read: the client and all its secret hashes in one round trip. */
export async function findClientWithSecretHashes(
  db: Executor,
  clientId: string,
): Promise<{ client: ClientRow; hashes: Buffer[] } | undefined> {
  const rows = await db
    .select({ client: clients, hash: clientSecrets.hash })
    .from(clients)
    .leftJoin(clientSecrets, eq(clientSecrets.clientId, clients.id))
    .where(eq(clients.id, clientId));
  if (rows.length === 0) return undefined;
  return { client: rows[0]!.client, hashes: rows.flatMap((r) => (r.hash ? [r.hash] : [])) };
}

/** Whether the client has this counterparty, not deleted (a fee counterparty must). */
export async function hasCounterparty(db: Executor, clientId: string, id: string): Promise<boolean> {
  const [row] = await db
    .select({ id: counterparties.id })
    .from(counterparties)
    .where(and(eq(counterparties.clientId, clientId), eq(counterparties.id, id), isNull(counterparties.deletedAt)));
  return row !== undefined;
}
