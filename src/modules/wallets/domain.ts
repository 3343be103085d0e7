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
import { BARCODE_MAX_TTL_S } from './schemas.ts';
import { walletPath } from './render.ts';
import * as q from './sql.ts';

export async function createWallet(
  db: Db,
  opts: { clientId: string; userId: string; baseUrl: string; now: Date },
): Promise<q.WalletRow> {
  const clientAccounts = await clientAccountIds(db, opts.clientId);
  try {
    return await db.transaction(async (tx) => {
      const user = await findUser(tx, opts.clientId, opts.userId);
      if (!user)
        throw apiError('UserNotFound', `No user ${opts.userId}.`, { status: 400, pointer: '/data/attributes/userId' });
      const wallet = await q.insertWallet(tx, {
        id: uuidv7(),
        clientId: opts.clientId,
        userId: user.id,
        status: 'Active',
        createdAt: opts.now,
        updatedAt: opts.now,
      });
      await openAccounts(tx, { clientId: opts.clientId, ownerType: 'wallet', ownerId: wallet.id, now: opts.now });
      // A reward pre-issued to the user's phone number is credited to the new wallet (a user
      // known by e-mail alone has none waiting).
      if (user.phoneNumber) {
        await claimWaitingRewards(tx, {
          clientId: opts.clientId,
          walletId: wallet.id,
          phoneNumber: user.phoneNumber,
          clientAccounts,
          baseUrl: opts.baseUrl,
          now: opts.now,
        });
      }
      return wallet;
    });
  } catch (err) {
    if (uniqueViolation(err) === 'wallets_client_user_uq') {
      const existing = await q.findWalletOfUser(db, opts.clientId, opts.userId);
      throw apiError('WalletAlreadyExists', 'This user already has a wallet with this merchant.', {
        pointer: '/data/attributes/userId',
        ...(existing ? { existing: { id: existing.id, href: opts.baseUrl + walletPath(existing.id) } } : {}),
      });
    }
    throw err;
  }
}

/** A wallet named in the path: 404 when unknown or another merchant's. */
export async function getWallet(
  db: Executor,
  opts: { clientId: string; walletId: string; forUpdate?: boolean },
): Promise<q.WalletRow> {
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
    const user = await resolveUserReference(db, {
      clientId: opts.clientId,
      reference: opts.userReference,
      notFound: { code: 'InvalidIdentifier', status: 400 },
    });
    if (user.id !== found.wallet.userId) {
      throw apiError('InvalidIdentifier', `The wallet does not belong to "${opts.userReference}".`, {
        parameter: 'userReference',
      });
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
const BARCODE_DEFAULT_TTL_S = 600;

export interface BarcodeOptions {
  /** When it expires; `ttlSeconds` says the same relative to now. Default 10 minutes. */
  expiresAt?: string;
  ttlSeconds?: number;
  /** null: no limit. */
  usageLimit: number | null;
  /** Answer with the wallet's newest usable barcode, if any, instead of making one. */
  reuseActive?: boolean;
}

/** Sandbox: a scan-and-pay barcode for the wallet (the wallet app shows these). */
export async function createBarcode(
  db: Db,
  opts: { clientId: string; walletId: string; now: Date } & BarcodeOptions,
): Promise<q.BarcodeView> {
  const expiresAt = barcodeExpiry(opts);
  const id = await db.transaction(async (tx) => {
    // Locked, so two requests with reuseActive never make two barcodes.
    const wallet = await getWallet(tx, { ...opts, forUpdate: true });
    if (wallet.status !== 'Active') throw apiError('WalletClosed');
    if (opts.reuseActive) {
      const active = await q.findActiveBarcode(tx, opts.clientId, wallet.id, opts.now);
      if (active) return active.id;
    }
    return (
      await insertBarcode(tx, {
        clientId: opts.clientId,
        walletId: wallet.id,
        expiresAt,
        usageLimit: opts.usageLimit,
        now: opts.now,
      })
    ).id;
  });
  return (await q.findBarcodeView(db, opts.clientId, { id }))!;
}

function barcodeExpiry(o: BarcodeOptions & { now: Date }): Date {
  if (o.expiresAt !== undefined && o.ttlSeconds !== undefined) {
    throw apiError('ValidationError', 'Send `expiresAt` or `ttlSeconds`, not both.', {
      pointer: '/data/attributes/ttlSeconds',
    });
  }
  if (o.expiresAt === undefined) return new Date(o.now.getTime() + (o.ttlSeconds ?? BARCODE_DEFAULT_TTL_S) * 1000);
  const at = new Date(o.expiresAt);
  const ahead = at.getTime() - o.now.getTime();
  if (!(ahead > 0 && ahead <= BARCODE_MAX_TTL_S * 1000)) {
    throw apiError('ValidationError', '`expiresAt` must be in the future and at most 24 hours ahead.', {
      pointer: '/data/attributes/expiresAt',
    });
  }
  return at;
}

async function insertBarcode(
  tx: Executor,
  b: { clientId: string; walletId: string; expiresAt: Date; usageLimit: number | null; now: Date },
): Promise<q.BarcodeRow> {
  for (let attempt = 0; ; attempt++) {
    const lookUpId = Array.from({ length: BARCODE_DIGITS }, (_, i) => randomInt(i === 0 ? 1 : 0, 10)).join('');
    try {
      // A savepoint, so a colliding lookUpId does not end the transaction.
      return await tx.transaction((sp) =>
        q.insertBarcode(sp, {
          id: uuidv7(),
          clientId: b.clientId,
          walletId: b.walletId,
          lookUpId,
          expiresAt: b.expiresAt,
          usageLimit: b.usageLimit,
          createdAt: b.now,
          updatedAt: b.now,
        }),
      );
    } catch (err) {
      if (uniqueViolation(err) !== 'wallet_barcodes_look_up_uq' || attempt > 5) throw err;
    }
  }
}

/** Why a barcode cannot be used now, or null when it can. */
function barcodeUnusable(b: q.BarcodeRow, now: Date): 'expired' | 'used' | null {
  if (b.expiresAt <= now) return 'expired';
  if (b.usageLimit !== null && b.usageCount >= b.usageLimit) return 'used';
  return null;
}

/** Checks a barcode is usable now: not expired, not used up. */
export function checkBarcode(b: q.BarcodeRow, now: Date): void {
  const why = barcodeUnusable(b, now);
  if (why === 'expired')
    throw apiError('WalletIdentifierExpired', 'The barcode has expired; ask the user to show a new one.');
  if (why === 'used')
    throw apiError('WalletIdentifierExpired', 'The barcode has been used; ask the user to show a new one.');
}

/** GET /wallets/barcode/{lookUpId}: scoped to the merchant; a gift id never resolves here. */
export async function lookupWalletByBarcode(
  db: Executor,
  opts: { clientId: string; lookUpId: string; now: Date },
): Promise<q.WalletRow> {
  const b = await q.findBarcode(db, opts.clientId, opts.lookUpId);
  if (!b) throw apiError('WalletNotFound', 'No wallet has this barcode.');
  checkBarcode(b, opts.now);
  return getWallet(db, { clientId: opts.clientId, walletId: b.walletId });
}

/** Sandbox: a barcode by its lookUpId (another merchant's is as unknown as a missing one). */
export async function getBarcode(
  db: Executor,
  opts: { clientId: string; lookUpId: string; now: Date },
): Promise<q.BarcodeView> {
  const b = await q.findBarcodeView(db, opts.clientId, { lookUpId: opts.lookUpId });
  if (!b) throw apiError('BarcodeNotFound');
  const why = barcodeUnusable(b, opts.now);
  if (why === 'expired') throw apiError('InvalidTransaction', 'Barcode has expired.');
  if (why === 'used') throw apiError('InvalidTransaction', 'Barcode has exceeded maximum uses.');
  return b;
}

/** Sandbox: a wallet's barcodes, newest first. */
export async function listBarcodes(
  db: Executor,
  opts: { clientId: string; walletId: string; includeExpired: boolean; now: Date; page: Page },
) {
  const wallet = await getWallet(db, opts);
  return q.listBarcodeViews(db, opts.clientId, wallet.id, opts);
}
