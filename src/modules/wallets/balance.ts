// The wallet balance of the spec's table, computed from the wallet's ledger accounts.
// available = spendable now; pending = deposits and rewards not yet cleared; reserved =
// authorized, not captured; total = available + pending + reserved, per bucket (docs/money.md#balances).
import type { WalletCode } from '../../ledger/accounts.ts';

export type Buckets = Record<WalletCode, number>;

interface Split {
  deposit: number;
  reward: { accrue: number; merchant: number; total: number };
  total: number;
}

export interface WalletBalance {
  available: Split;
  pending: Split;
  reserved: { total: number };
  total: Split;
  withdrawable?: { total: number };
}

const split = (deposit: number, accrue: number, merchant: number): Split => ({
  deposit,
  reward: { accrue, merchant, total: accrue + merchant },
  total: deposit + accrue + merchant,
});

/**
 * Rewards usable on one purchase: none below the merchant's minimum, never more than the
 * purchase, taken merchant rewards first (the spending order: merchant, accrue, deposit).
 */
export function usableRewards(
  b: Pick<Buckets, 'reward.accrue.available' | 'reward.merchant.available'>,
  purchaseAmount: number,
  minimumPurchase: number,
) {
  if (purchaseAmount < minimumPurchase || purchaseAmount <= 0) return { accrue: 0, merchant: 0 };
  const merchant = Math.min(b['reward.merchant.available'], purchaseAmount);
  const accrue = Math.min(b['reward.accrue.available'], purchaseAmount - merchant);
  return { accrue, merchant };
}

export function walletBalance(
  b: Buckets,
  opts: { purchaseAmount?: number; rewardMinimumPurchase: number; includeWithdrawable?: boolean },
): WalletBalance {
  const rewards =
    opts.purchaseAmount === undefined
      ? { accrue: b['reward.accrue.available'], merchant: b['reward.merchant.available'] }
      : usableRewards(b, opts.purchaseAmount, opts.rewardMinimumPurchase);
  const out: WalletBalance = {
    available: split(b['deposit.available'], rewards.accrue, rewards.merchant),
    pending: split(b['deposit.pending'], b['reward.accrue.pending'], b['reward.merchant.pending']),
    reserved: { total: b['deposit.reserved'] + b['reward.accrue.reserved'] + b['reward.merchant.reserved'] },
    // What the wallet holds, whatever the purchase.
    total: split(
      b['deposit.available'] + b['deposit.pending'] + b['deposit.reserved'],
      b['reward.accrue.available'] + b['reward.accrue.pending'] + b['reward.accrue.reserved'],
      b['reward.merchant.available'] + b['reward.merchant.pending'] + b['reward.merchant.reserved'],
    ),
  };
  // Rewards are never withdrawable (docs/money.md#balances).
  if (opts.includeWithdrawable) out.withdrawable = { total: b['deposit.available'] };
  return out;
}
