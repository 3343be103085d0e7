// Transfers between two counterparties of one merchant: one ledger entry,
// from.available −amount │ to.available +amount, complete at once. Both accounts are locked in
// id order (as every movement locks them) before the source's balance is read, so transfers
// in opposite directions queue instead of deadlocking, and concurrent ones never spend more
// than the source holds (its balance may be negative from fees; the ledger's CHECK does not
// guard it).
import { uuidv7 } from '../../ids.ts';
import type { Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import type { Page } from '../../http/paging.ts';
import { postEntry } from '../../ledger/post.ts';
import { lockAvailable } from '../counterparties/domain.ts';
import * as q from './sql.ts';

export async function createTransfer(
  tx: Executor,
  i: {
    clientId: string;
    fromCounterpartyId: string;
    toCounterpartyId: string;
    amount: number;
    idempotencyKey: string;
    metadata?: Record<string, string>;
    now: Date;
  },
): Promise<q.TransferRow> {
  if (i.fromCounterpartyId === i.toCounterpartyId) {
    throw apiError('ValidationFailed', 'Same source and destination: a transfer needs two different counterparties.', {
      pointer: '/data/attributes/toCounterpartyId',
    });
  }
  const locked = await lockAvailable(tx, i.clientId, [i.fromCounterpartyId, i.toCounterpartyId]);
  const from = locked.get(i.fromCounterpartyId)!;
  const to = locked.get(i.toCounterpartyId)!;
  if (from.balance < i.amount) {
    throw apiError(
      'ValidationFailed',
      `Insufficient balance: counterparty ${i.fromCounterpartyId} has ${from.balance} cents available.`,
      { pointer: '/data/attributes/amount' },
    );
  }
  const id = uuidv7();
  const entryId = await postEntry(
    tx,
    {
      clientId: i.clientId,
      kind: 'counterparty.transfer',
      refType: 'counterparty_transfer',
      refId: id,
      postings: [
        { accountId: from.id, amount: -i.amount },
        { accountId: to.id, amount: i.amount },
      ],
      now: i.now,
    },
    undefined,
    { locked: new Set([from.id, to.id]) },
  );
  return q.insertTransfer(tx, {
    id,
    clientId: i.clientId,
    fromCounterpartyId: i.fromCounterpartyId,
    toCounterpartyId: i.toCounterpartyId,
    amount: i.amount,
    status: 'Completed',
    idempotencyKey: i.idempotencyKey,
    metadata: i.metadata ?? null,
    ledgerEntryId: entryId ?? null,
    failureReason: null,
    createdAt: i.now,
    updatedAt: i.now,
  });
}

export async function getTransfer(
  db: Executor,
  opts: { clientId: string; transferId: string },
): Promise<q.TransferRow> {
  const t = await q.findTransfer(db, opts.clientId, opts.transferId);
  if (!t) throw apiError('TransferNotFound', `Counterparty transfer with ID '${opts.transferId}' not found.`);
  return t;
}

export async function listTransfers(db: Executor, opts: { clientId: string; filters: q.TransferFilters; page: Page }) {
  return q.listTransferRows(db, opts.clientId, opts.filters, opts.page);
}
