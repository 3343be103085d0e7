// Linked bank accounts: listing, removal (irreversible, idempotent), sandbox linking.
import { uuidv7 } from '../../ids.ts';
import type { Db, Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import { providerUnavailable } from '../../providers/http/client.ts';
import type { Page } from '../../http/paging.ts';
import type { BankLinkingProvider } from '../../providers/bank-linking.ts';
import { getUser } from '../users/domain.ts';
import * as q from './sql.ts';

export async function listLinkedAccounts(db: Executor, opts: { clientId: string; userId: string; page: Page }) {
  const user = await getUser(db, opts);
  return q.listLinkedAccountRows(db, opts.clientId, user.id, opts.page);
}

/**
 * Links a new account through the provider: the user finished the provider's linking flow (in
 * the operator's wallet app, which hands Coffer the flow's `token`), or the sandbox simulates it.
 * The new account's id is the provider's idempotency key.
 */
export async function linkAccount(
  db: Db,
  opts: { clientId: string; userId: string; provider: BankLinkingProvider; token?: string; institutionName?: string; accountType?: 'checking' | 'savings'; accountMask?: string; now: Date },
): Promise<q.LinkedAccountRow> {
  const user = await getUser(db, opts);
  const id = uuidv7();
  // The provider is called outside any transaction.
  let linked;
  try {
    linked = await opts.provider.linkAccount({ reference: id, userId: user.id, token: opts.token, institutionName: opts.institutionName, accountType: opts.accountType, accountMask: opts.accountMask });
  } catch (err) {
    throw providerUnavailable(err, 'The bank-linking provider did not answer; nothing was linked. Retry the request.');
  }
  return q.insertLinkedAccount(db, {
    id,
    clientId: opts.clientId,
    userId: user.id,
    provider: linked.provider,
    externalId: linked.externalId,
    status: 'Connected',
    accountType: linked.accountType,
    accountName: linked.accountName,
    accountMask: linked.accountMask,
    institutionName: linked.institutionName,
    institutionId: linked.institutionId,
    createdAt: opts.now,
    updatedAt: opts.now,
  });
}

/**
 * Removes (disconnects) an account: recorded here first, then deactivated with the provider
 * outside the transaction. If that call fails the deactivation job retries it; removing an
 * already removed account is a no-op.
 */
export async function removeLinkedAccount(
  db: Db,
  opts: { clientId: string; userId: string; linkedAccountId: string; provider: BankLinkingProvider; now: Date },
): Promise<void> {
  const account = await db.transaction(async (tx) => {
    const user = await getUser(tx, opts);
    const row = await q.findLinkedAccount(tx, opts.clientId, user.id, opts.linkedAccountId, { forUpdate: true });
    if (!row) throw apiError('LinkedAccountNotFound', `User ${user.id} has no linked account ${opts.linkedAccountId}.`);
    if (row.status === 'Disconnected') return row;
    return q.updateLinkedAccountRow(tx, row.id, { status: 'Disconnected', disconnectedAt: opts.now, updatedAt: opts.now });
  });
  if (account.providerDeactivatedAt === null) await confirmDeactivation(db, account, opts.provider, opts.now).catch(() => {});
}

async function confirmDeactivation(db: Executor, account: q.LinkedAccountRow, provider: BankLinkingProvider, now: Date): Promise<void> {
  await provider.deactivateAccount({ reference: account.id, externalId: account.externalId });
  await q.updateLinkedAccountRow(db, account.id, { providerDeactivatedAt: now });
}

/** Job: retries provider deactivations that failed at removal time. */
export async function retryDeactivations(db: Db, opts: { provider: BankLinkingProvider; now: () => Date }): Promise<number> {
  let done = 0;
  for (const account of await q.unconfirmedDeactivations(db, 50)) {
    await confirmDeactivation(db, account, opts.provider, opts.now()).then(() => done++, () => {});
  }
  return done;
}
