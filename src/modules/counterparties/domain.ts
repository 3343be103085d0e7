// Counterparties: the merchant's payees for disbursements, and the payer of processing fees.
import { uuidv7 } from '../../ids.ts';
import type { Sealer } from '../../crypto/sealer.ts';
import type { Db, Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import type { Page } from '../../http/paging.ts';
import { balancesOf, openAccounts } from '../../ledger/accounts.ts';
import * as q from './sql.ts';

/** ABA routing number checksum: 3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) ≡ 0 (mod 10). */
export function isValidRoutingNumber(rn: string): boolean {
  if (!/^[0-9]{9}$/.test(rn)) return false;
  const d = [...rn].map(Number);
  return (3 * (d[0]! + d[3]! + d[6]!) + 7 * (d[1]! + d[4]! + d[7]!) + (d[2]! + d[5]! + d[8]!)) % 10 === 0;
}

export async function createCounterparty(
  db: Db,
  opts: { clientId: string; label: string; accountNumber: string; routingNumber: string; accountType: string; sealer: Sealer; now: Date },
): Promise<q.CounterpartyRow> {
  if (!isValidRoutingNumber(opts.routingNumber)) {
    throw apiError('ValidationError', '`routingNumber` fails the ABA checksum.', { pointer: '/data/attributes/routingNumber' });
  }
  const id = uuidv7();
  return db.transaction(async (tx) => {
    const cp = await q.insertCounterparty(tx, {
      id,
      clientId: opts.clientId,
      label: opts.label,
      accountType: opts.accountType,
      accountNumberSealed: opts.sealer.seal(opts.accountNumber, 'bank-account', `counterparties:${id}`),
      accountNumberLast4: opts.accountNumber.slice(-4),
      routingNumber: opts.routingNumber,
      createdAt: opts.now,
      updatedAt: opts.now,
    });
    await openAccounts(tx, { clientId: opts.clientId, ownerType: 'counterparty', ownerId: cp.id, now: opts.now });
    return cp;
  });
}

export async function getCounterparty(db: Executor, opts: { clientId: string; counterpartyId: string }): Promise<q.CounterpartyRow> {
  const cp = await q.findCounterparty(db, opts.clientId, opts.counterpartyId);
  if (!cp) throw apiError('CounterpartyNotFound', `No counterparty ${opts.counterpartyId}.`);
  return cp;
}

export async function listCounterparties(db: Executor, opts: { clientId: string; page: Page }) {
  return q.listCounterpartyRows(db, opts.clientId, opts.page);
}

export interface CounterpartyBalance {
  pending: number;
  available: number;
}

export async function counterpartyBalances(db: Executor, ids: string[]): Promise<Map<string, CounterpartyBalance>> {
  const raw = await balancesOf(db, 'counterparty', ids);
  return new Map(ids.map((id) => [id, { pending: raw.get(id)?.['counterparty.pending'] ?? 0, available: raw.get(id)?.['counterparty.available'] ?? 0 }]));
}
