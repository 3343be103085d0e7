// Counterparties: the merchant's payees for disbursements, and the payer of processing fees.
import { uuidv7 } from '../../ids.ts';
import type { Sealer } from '../../crypto/sealer.ts';
import type { Db, Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import type { Page } from '../../http/paging.ts';
import { balancesOf, openAccounts } from '../../ledger/accounts.ts';
import { resolveSettings } from '../clients/settings.ts';
import { findClient } from '../clients/sql.ts';
import { defaultLabel, type CounterpartyBalance } from './render.ts';
import * as q from './sql.ts';

/** ABA routing number checksum: 3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) ≡ 0 (mod 10). */
function isValidRoutingNumber(rn: string): boolean {
  if (!/^[0-9]{9}$/.test(rn)) return false;
  const d = [...rn].map(Number);
  return (3 * (d[0]! + d[3]! + d[6]!) + 7 * (d[1]! + d[4]! + d[7]!) + (d[2]! + d[5]! + d[8]!)) % 10 === 0;
}

export async function createCounterparty(
  db: Db,
  opts: {
    clientId: string;
    label?: string;
    accountNumber: string;
    routingNumber: string;
    accountType: string;
    sealer: Sealer;
    now: Date;
  },
): Promise<q.CounterpartyRow> {
  if (!isValidRoutingNumber(opts.routingNumber)) {
    throw apiError('ValidationError', '`routingNumber` fails the ABA checksum.', {
      pointer: '/data/attributes/routingNumber',
    });
  }
  const accountType = opts.accountType.toLowerCase();
  const last4 = opts.accountNumber.slice(-4);
  const id = uuidv7();
  return db.transaction(async (tx) => {
    const cp = await q.insertCounterparty(tx, {
      id,
      clientId: opts.clientId,
      label: opts.label ?? defaultLabel(accountType, last4),
      accountType,
      accountNumberSealed: opts.sealer.seal(opts.accountNumber, 'bank-account', `counterparties:${id}`),
      accountNumberLast4: last4,
      routingNumber: opts.routingNumber,
      createdAt: opts.now,
      updatedAt: opts.now,
    });
    await openAccounts(tx, { clientId: opts.clientId, ownerType: 'counterparty', ownerId: cp.id, now: opts.now });
    return cp;
  });
}

const notFound = (id: string) => apiError('CounterpartyNotFound', `No counterparty ${id}.`);

export async function getCounterparty(
  db: Executor,
  opts: { clientId: string; counterpartyId: string },
): Promise<q.CounterpartyRow> {
  const cp = await q.findCounterparty(db, opts.clientId, opts.counterpartyId);
  if (!cp) throw notFound(opts.counterpartyId);
  return cp;
}

export async function listCounterparties(db: Executor, opts: { clientId: string; page: Page }) {
  return q.listCounterpartyRows(db, opts.clientId, opts.page);
}

/** Only the label can change (the bank account cannot). */
export async function updateCounterparty(
  db: Executor,
  opts: { clientId: string; counterpartyId: string; label?: string; now: Date },
): Promise<q.CounterpartyRow> {
  const cp =
    opts.label === undefined
      ? await q.findCounterparty(db, opts.clientId, opts.counterpartyId)
      : await q.updateCounterpartyRow(db, opts.clientId, opts.counterpartyId, {
          label: opts.label,
          updatedAt: opts.now,
        });
  if (!cp) throw notFound(opts.counterpartyId);
  return cp;
}

/**
 * Soft delete (Accrue's): the counterparty leaves the API, its rows and ledger accounts stay.
 * Refused while money is on it (409 CounterpartyHasBalance) or may still reach it: a payout
 * not yet Completed or Returned, a payment not yet settled that disburses to it, or the
 * merchant's fees (409 CounterpartyInUse). Its accounts are locked first, so a payout or
 * transfer racing with the delete either lands before the check (and is seen) or finds the
 * counterparty gone.
 */
export async function deleteCounterparty(
  db: Db,
  opts: { clientId: string; counterpartyId: string; now: Date },
): Promise<void> {
  await db.transaction(async (tx) => {
    const cp = await q.findCounterparty(tx, opts.clientId, opts.counterpartyId, { lock: true });
    if (!cp) throw notFound(opts.counterpartyId);
    const accounts = await q.lockCounterpartyAccounts(tx, opts.clientId, [cp.id]);
    const held = accounts.filter((a) => a.balance !== 0);
    if (held.length > 0) {
      throw apiError(
        'CounterpartyHasBalance',
        `Counterparty ${cp.id} still holds a balance (${held.map((a) => `${a.code.replace('counterparty.', '')} ${a.balance}`).join(', ')}) and cannot be deleted. Pay the remaining balance out first.`,
      );
    }
    const client = await findClient(tx, opts.clientId);
    if (client && resolveSettings(client.settings).feeCounterpartyId === cp.id) {
      throw apiError(
        'CounterpartyInUse',
        `Counterparty ${cp.id} pays the merchant's fees (settings.feeCounterpartyId); name another one first.`,
      );
    }
    if (await q.hasPayoutInFlight(tx, cp.id)) {
      throw apiError(
        'CounterpartyInUse',
        `Counterparty ${cp.id} has a payout that is not Completed or Returned yet; its money may come back.`,
      );
    }
    if (await q.hasUnsettledDisbursement(tx, opts.clientId, cp.id)) {
      throw apiError('CounterpartyInUse', `A payment that has not settled yet disburses to counterparty ${cp.id}.`);
    }
    await q.updateCounterpartyRow(tx, opts.clientId, cp.id, { deletedAt: opts.now, updatedAt: opts.now });
  });
}

/**
 * Locks the counterparties' available accounts (in id order) and checks, after the lock, that
 * each is still the merchant's live counterparty: 404 otherwise, including for one a delete
 * removed while this waited.
 */
export async function lockAvailable(
  tx: Executor,
  clientId: string,
  counterpartyIds: string[],
): Promise<Map<string, q.LockedAccount>> {
  const locked = await q.lockCounterpartyAccounts(tx, clientId, counterpartyIds, 'counterparty.available');
  const live = await q.liveCounterpartyIds(tx, clientId, counterpartyIds);
  const gone = counterpartyIds.find((id) => !live.has(id));
  if (gone !== undefined) throw apiError('CounterpartyNotFound', `No counterparty ${gone}.`);
  return new Map(locked.map((a) => [a.ownerId, a]));
}

export async function counterpartyBalances(db: Executor, ids: string[]): Promise<Map<string, CounterpartyBalance>> {
  const raw = await balancesOf(db, 'counterparty', ids);
  return new Map(
    ids.map((id) => [
      id,
      { pending: raw.get(id)?.['counterparty.pending'] ?? 0, available: raw.get(id)?.['counterparty.available'] ?? 0 },
    ]),
  );
}
