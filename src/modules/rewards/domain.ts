// Merchant-funded rewards (decisions §6): a reward credits the wallet's merchant reward bucket
// at once, from the merchant's reward funding account.
import { uuidv7 } from '../../ids.ts';
import type { Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import { accountIds, type ClientCode, type WalletCode } from '../../ledger/accounts.ts';
import { postEntry } from '../../ledger/post.ts';
import { findWallet } from '../wallets/sql.ts';
import * as q from './sql.ts';

export async function issueReward(
  tx: Executor,
  i: { clientId: string; walletId: string; amount: number; message?: string; clientAccounts: Record<ClientCode, string>; now: Date },
): Promise<q.RewardRow> {
  const wallet = await findWallet(tx, i.clientId, i.walletId);
  if (!wallet) throw apiError('WalletNotFound', `No wallet ${i.walletId}.`, { status: 400, pointer: '/data/attributes/walletId' });
  if (wallet.status !== 'Active') throw apiError('WalletClosed', undefined, { pointer: '/data/attributes/walletId' });
  const id = uuidv7();
  const w = await accountIds<WalletCode>(tx, { ownerType: 'wallet', ownerId: wallet.id });
  await postEntry(tx, {
    clientId: i.clientId,
    kind: 'reward.merchant',
    refType: 'reward',
    refId: id,
    postings: [
      { accountId: i.clientAccounts['merchant.rewards'], amount: -i.amount },
      { accountId: w['reward.merchant.available'], amount: i.amount },
    ],
    now: i.now,
  });
  return q.insertReward(tx, { id, clientId: i.clientId, walletId: wallet.id, amount: i.amount, message: i.message ?? null, createdAt: i.now });
}
