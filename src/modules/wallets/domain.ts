// Wallets: one per user per merchant, their balances, and scan-and-pay barcodes.
import { randomInt } from 'node:crypto';
import { uuidv7 } from '../../ids.ts';
import type { Db, Executor } from '../../db/open.ts';
import { uniqueViolation } from '../../db/errors.ts';
import { apiError } from '../../http/errors.ts';
import type { Page } from '../../http/paging.ts';
import { clientAccountIds, openAccounts } from '../../ledger/accounts.ts';
import { claimWaitingRewards } from '../rewards/domain.ts';
import { resolveUserReference } from '../users/domain.ts';
import { findUser } from '../users/sql.ts';
import { walletBalance, type WalletBalance } from './balance.ts';
import * as q from './sql.ts';

export async function createWallet(db: Db, opts: { clientId: string; userId: string; baseUrl: string; now: Date }): Promise<q.WalletRow> {
  const clientAccounts = await clientAccountIds(db, opts.clientId);
  try {
    return await db.transaction(async (tx) => {
      const user = await findUser(tx, opts.clientId, opts.userId);
      if (!user) throw apiError('UserNotFound', `No user ${opts.userId}.`, { status: 400, pointer: '/data/attributes/userId' });
      const wallet = await q.insertWallet(tx, { id: uuidv7(), clientId: opts.clientId, userId: user.id, status: 'Active', createdAt: opts.now, updatedAt: opts.now });
      await openAccounts(tx, { clientId: opts.clientId, ownerType: 'wallet', ownerId: wallet.id, now: opts.now });
      // A reward pre-issued to the user's phone number is credited to the new wallet.
      await claimWaitingRewards(tx, { clientId: opts.clientId, walletId: wallet.id, phoneNumber: user.phoneNumber, clientAccounts, baseUrl: opts.baseUrl, now: opts.now });
      return wallet;
    });
  } catch (err) {
    if (uniqueViolation(err) === 'wallets_client_user_uq') {
      throw apiError('WalletAlreadyExists', 'This user already has a wallet with this merchant.', { pointer: '/data/attributes/userId' });
    }
    throw err;
  }
}

/** A wallet named in the path: 404 when unknown or another merchant's. */
export async function getWallet(db: Executor, opts: { clientId: string; walletId: string; forUpdate?: boolean }): Promise<q.WalletRow> {
  const w = await q.findWallet(db, opts.clientId, opts.walletId, { forUpdate: opts.forUpdate });
  if (!w) throw apiError('WalletNotFound', `No wallet ${opts.walletId}.`);
  return w;
}

export async function listWallets(db: Executor, opts: { clientId: string; filters: q.WalletFilters; page: Page }) {
  return q.listWalletRows(db, opts.clientId, opts.filters, opts.page);
}

export interface BalanceOptions {
  purchaseAmount?: number;
  includeWithdrawable?: boolean;
  rewardMinimumPurchase: number;
}

export async function getWalletBalance(
  db: Db,
  opts: { clientId: string; walletId: string; userReference?: string } & BalanceOptions,
): Promise<{ wallet: q.WalletRow; balance: WalletBalance }> {
  const found = await q.findWalletWithBuckets(db, opts.clientId, opts.walletId);
  if (!found) throw apiError('WalletNotFound', `No wallet ${opts.walletId}.`);
  if (opts.userReference !== undefined) {
    // The caller names whose wallet it expects; a mismatch is refused, not answered.
    const user = await resolveUserReference(db, { clientId: opts.clientId, reference: opts.userReference, notFound: { code: 'InvalidIdentifier', status: 400 } });
    if (user.id !== found.wallet.userId) {
      throw apiError('InvalidIdentifier', `The wallet does not belong to "${opts.userReference}".`, { parameter: 'userReference' });
    }
  }
  return { wallet: found.wallet, balance: walletBalance(found.buckets, opts) };
}

/** GET /users/{userId}/wallet-balance: the user's wallet with this merchant. */
export async function getUserWalletBalance(db: Db, opts: { clientId: string; userId: string } & BalanceOptions) {
  const user = await findUser(db, opts.clientId, opts.userId);
  if (!user) throw apiError('UserNotFound', `No user ${opts.userId}.`);
  const wallet = await q.findWalletOfUser(db, opts.clientId, user.id);
  if (!wallet) throw apiError('InvalidUser', 'The user has no wallet with this merchant.');
  return getWalletBalance(db, { ...opts, walletId: wallet.id });
}

const BARCODE_DIGITS = 16;

/** Sandbox: a scan-and-pay barcode for the wallet (the wallet app shows these). */
export async function createBarcode(
  db: Executor,
  opts: { clientId: string; walletId: string; ttlSeconds?: number; usageLimit?: number; now: Date },
): Promise<q.BarcodeRow> {
  const wallet = await getWallet(db, opts);
  if (wallet.status !== 'Active') throw apiError('WalletClosed');
  for (let attempt = 0; ; attempt++) {
    const lookUpId = Array.from({ length: BARCODE_DIGITS }, (_, i) => randomInt(i === 0 ? 1 : 0, 10)).join('');
    try {
      return await q.insertBarcode(db, {
        id: uuidv7(),
        clientId: opts.clientId,
        walletId: wallet.id,
        lookUpId,
        expiresAt: new Date(opts.now.getTime() + (opts.ttlSeconds ?? 600) * 1000),
        usageLimit: opts.usageLimit ?? 1,
        createdAt: opts.now,
      });
    } catch (err) {
      if (uniqueViolation(err) !== 'wallet_barcodes_look_up_uq' || attempt > 5) throw err;
    }
  }
}

/** Checks a barcode is usable now: not expired, not used up. */
export function checkBarcode(b: q.BarcodeRow, now: Date): void {
  if (b.expiresAt <= now) throw apiError('WalletIdentifierExpired', 'The barcode has expired; ask the user to show a new one.');
  if (b.usageCount >= b.usageLimit) throw apiError('WalletIdentifierExpired', 'The barcode has been used; ask the user to show a new one.');
}

/** GET /wallets/barcode/{lookUpId}: scoped to the merchant; a gift id never resolves here. */
export async function lookupWalletByBarcode(db: Executor, opts: { clientId: string; lookUpId: string; now: Date }): Promise<q.WalletRow> {
  const b = await q.findBarcode(db, opts.clientId, opts.lookUpId);
  if (!b) throw apiError('WalletNotFound', 'No wallet has this barcode.');
  checkBarcode(b, opts.now);
  return getWallet(db, { clientId: opts.clientId, walletId: b.walletId });
}
