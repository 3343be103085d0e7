// External transactions: purchases, voids and refunds the merchant made outside Coffer (a till,
// another checkout), recorded so the merchant's history of a customer is in one place. They
// move no money: nothing here touches the ledger. A Void or Refund names the Purchase it is
// about; `source.customerId` links the transaction to the merchant's user it names (a user id
// or reference id), when one does. Each (type, source id) is recorded once: sending it again
// returns the first record, so a batch can be retried whole.
import { uuidv7 } from '../../ids.ts';
import type { Db, Executor } from '../../db/open.ts';
import { ApiError, apiError, errorItem, type ErrorItem } from '../../http/errors.ts';
import type { Page } from '../../http/paging.ts';
import * as q from './sql.ts';

export interface ExternalTransactionInput {
  type?: 'Purchase' | 'Void' | 'Refund';
  linkedExternalTransactionId?: string;
  source: { id: string; createdAt: string; customerId?: string };
  channel?: string;
  payments: { amount: number; method?: string }[];
  payload?: object;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Which user each customer id names: a user id first, else exactly one user's reference id. */
async function resolveCustomers(tx: Executor, clientId: string, customerIds: string[]): Promise<Map<string, string>> {
  const refs = [...new Set(customerIds)];
  const found = await q.usersNamed(tx, clientId, {
    ids: refs.filter((r) => UUID.test(r)).map((r) => r.toLowerCase()),
    references: refs,
  });
  const out = new Map<string, string>();
  for (const ref of refs) {
    const byId = found.find((u) => u.id === ref.toLowerCase());
    const byReference = found.filter((u) => u.referenceId === ref || u.stableReferenceId === ref);
    const user = byId ?? (byReference.length === 1 ? byReference[0] : undefined);
    if (user) out.set(ref, user.id);
  }
  return out;
}

/** Records the batch, all or nothing: any invalid item is a 400 naming every problem. */
export async function addExternalTransactions(
  db: Db,
  opts: { clientId: string; items: ExternalTransactionInput[]; now: Date },
): Promise<q.ExternalTransactionRow[]> {
  const items = opts.items.map((a) => ({ ...a, type: a.type ?? 'Purchase' }));
  const errors: ErrorItem[] = [];
  const ptr = (i: number, member: string) => ({ pointer: `/data/${i}/attributes/${member}` });
  items.forEach((a, i) => {
    if (a.type === 'Purchase' && a.linkedExternalTransactionId !== undefined) {
      errors.push(
        errorItem(
          'ValidationError',
          'A Purchase links no other transaction: leave `linkedExternalTransactionId` out.',
          ptr(i, 'linkedExternalTransactionId'),
        ),
      );
    }
    if (a.type !== 'Purchase' && a.linkedExternalTransactionId === undefined) {
      errors.push(
        errorItem(
          'ValidationError',
          `A ${a.type} needs \`linkedExternalTransactionId\`: the Purchase it is about.`,
          ptr(i, 'linkedExternalTransactionId'),
        ),
      );
    }
  });
  if (errors.length > 0) throw new ApiError(errors);

  return db.transaction(async (tx) => {
    const linked = await q.typesOf(
      tx,
      opts.clientId,
      items.flatMap((a) => (a.linkedExternalTransactionId ? [a.linkedExternalTransactionId] : [])),
    );
    items.forEach((a, i) => {
      if (a.linkedExternalTransactionId !== undefined && linked.get(a.linkedExternalTransactionId) !== 'Purchase') {
        errors.push(
          errorItem(
            'ValidationError',
            `\`linkedExternalTransactionId\` must be one of your recorded Purchases; ${a.linkedExternalTransactionId} is not.`,
            ptr(i, 'linkedExternalTransactionId'),
          ),
        );
      }
    });
    if (errors.length > 0) throw new ApiError(errors);

    const customers = await resolveCustomers(
      tx,
      opts.clientId,
      items.flatMap((a) => (a.source.customerId ? [a.source.customerId] : [])),
    );
    await q.insertNew(
      tx,
      items.map((a) => ({
        id: uuidv7(),
        clientId: opts.clientId,
        type: a.type,
        linkedExternalTransactionId: a.linkedExternalTransactionId ?? null,
        sourceId: a.source.id,
        sourceCreatedAt: new Date(a.source.createdAt),
        sourceCustomerId: a.source.customerId ?? null,
        userId: a.source.customerId ? (customers.get(a.source.customerId) ?? null) : null,
        channel: a.channel ?? null,
        payments: a.payments.map((p) => ({ amount: p.amount, method: p.method ?? 'Unknown' })),
        payload: (a.payload as Record<string, unknown> | undefined) ?? null,
        createdAt: opts.now,
        updatedAt: opts.now,
      })),
    );
    // Read back in one query: the rows just inserted and those recorded before.
    const rows = await q.findBySource(
      tx,
      opts.clientId,
      items.map((a) => ({ type: a.type, sourceId: a.source.id })),
    );
    const byKey = new Map(rows.map((r) => [`${r.type}\u0000${r.sourceId}`, r]));
    return items.map((a) => byKey.get(`${a.type}\u0000${a.source.id}`)!);
  });
}

export async function getExternalTransaction(
  db: Executor,
  opts: { clientId: string; externalTransactionId: string },
): Promise<q.ExternalTransactionRow> {
  const row = await q.findExternalTransaction(db, opts.clientId, opts.externalTransactionId);
  if (!row)
    throw apiError('ExternalTransactionNotFound', `External transaction '${opts.externalTransactionId}' not found.`);
  return row;
}

export async function listExternalTransactions(
  db: Executor,
  opts: { clientId: string; filters: q.ExternalTransactionFilters; page: Page },
) {
  return q.listExternalTransactionRows(db, opts.clientId, opts.filters, opts.page);
}
