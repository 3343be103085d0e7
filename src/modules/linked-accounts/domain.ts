// Linked bank accounts: listing, removal (irreversible, idempotent), sandbox linking of bank
// accounts and of demo cards (backup payment methods).
import { randomBytes } from 'node:crypto';
import { uuidv7 } from '../../ids.ts';
import type { Db, Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import { providerUnavailable } from '../../http/errors.ts';
import type { Page } from '../../http/paging.ts';
import type { BankLinkingProvider } from '../../providers/bank-linking.ts';
import { getUser } from '../users/domain.ts';
import { getWallet } from '../wallets/domain.ts';
import type { TestCardType } from './schemas.ts';
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
  opts: {
    clientId: string;
    userId: string;
    provider: BankLinkingProvider;
    token?: string;
    institutionName?: string;
    accountType?: 'checking' | 'savings';
    accountMask?: string;
    now: Date;
  },
): Promise<q.LinkedAccountRow> {
  const user = await getUser(db, opts);
  const id = uuidv7();
  // The provider is called outside any transaction.
  let linked: Awaited<ReturnType<typeof opts.provider.linkAccount>>;
  try {
    linked = await opts.provider.linkAccount({
      reference: id,
      userId: user.id,
      token: opts.token,
      institutionName: opts.institutionName,
      accountType: opts.accountType,
      accountMask: opts.accountMask,
    });
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

/** What a demo card of each type looks like: brand, credit or debit, last four digits (fixed per type). */
const TEST_CARDS: Record<
  TestCardType,
  { brand: 'Visa' | 'Mastercard'; accountType: (typeof q.CARD_ACCOUNT_TYPES)[number]; mask: string }
> = {
  'visa-us-credit': { brand: 'Visa', accountType: 'creditCard', mask: '4242' },
  'visa-gb-credit': { brand: 'Visa', accountType: 'creditCard', mask: '1111' },
  'visa-gb-debit': { brand: 'Visa', accountType: 'debit', mask: '0002' },
  'mastercard-mu-credit': { brand: 'Mastercard', accountType: 'creditCard', mask: '4444' },
  'mastercard-de-debit': { brand: 'Mastercard', accountType: 'debit', mask: '8210' },
};

/**
 * Sandbox: links a demo card to the wallet's user as a backup payment method: a Connected
 * linked account from provider Checkout, which funds what the wallet does not cover (the
 * linked part of an authorization) and card-funded deposits. Linking the same test card again
 * answers with the account already linked (`created: false`). No provider is called: the
 * card is made up here, as the sandbox's card network would.
 */
export async function linkDemoCard(
  db: Db,
  opts: { clientId: string; walletId: string; testCardType?: TestCardType; now: Date },
): Promise<{ account: q.LinkedAccountRow; created: boolean }> {
  const card = TEST_CARDS[opts.testCardType ?? 'visa-us-credit'];
  return db.transaction(async (tx) => {
    // Locked, so the same card linked twice at once is still one account.
    const wallet = await getWallet(tx, { clientId: opts.clientId, walletId: opts.walletId, forUpdate: true });
    if (wallet.status !== 'Active') throw apiError('WalletClosed');
    const like = {
      provider: 'Checkout',
      accountType: card.accountType,
      institutionName: card.brand,
      accountMask: card.mask,
    };
    const existing = await q.findConnectedAccountLike(tx, opts.clientId, wallet.userId, like);
    if (existing) return { account: existing, created: false };
    const account = await q.insertLinkedAccount(tx, {
      id: uuidv7(),
      clientId: opts.clientId,
      userId: wallet.userId,
      ...like,
      externalId: `card_${randomBytes(12).toString('hex')}`,
      status: 'Connected',
      accountName: `${card.brand} ${card.accountType === 'debit' ? 'Debit' : 'Credit'} ${card.mask}`,
      institutionId: `ins_checkout_${card.brand.toLowerCase()}`,
      createdAt: opts.now,
      updatedAt: opts.now,
    });
    return { account, created: true };
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
    return q.updateLinkedAccountRow(tx, row.id, {
      status: 'Disconnected',
      disconnectedAt: opts.now,
      updatedAt: opts.now,
    });
  });
  if (account.providerDeactivatedAt === null)
    await confirmDeactivation(db, account, opts.provider, opts.now).catch(() => {});
}

async function confirmDeactivation(
  db: Executor,
  account: q.LinkedAccountRow,
  provider: BankLinkingProvider,
  now: Date,
): Promise<void> {
  await provider.deactivateAccount({ reference: account.id, externalId: account.externalId });
  await q.updateLinkedAccountRow(db, account.id, { providerDeactivatedAt: now });
}

/** Job: retries provider deactivations that failed at removal time. */
export async function retryDeactivations(
  db: Db,
  opts: { provider: BankLinkingProvider; now: () => Date },
): Promise<number> {
  let done = 0;
  for (const account of await q.unconfirmedDeactivations(db, 50)) {
    await confirmDeactivation(db, account, opts.provider, opts.now()).then(
      () => done++,
      () => {},
    );
  }
  return done;
}
