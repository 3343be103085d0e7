// The ledger side of checkout. Wallet money is spent in the order merchant rewards, accrue
// rewards, deposit money (docs/adr/0003-double-entry-ledger.md); whatever the wallet does not cover comes from the
// linked bank account.
//
//   reserve   wallet <bucket>.available → <bucket>.reserved              (authorize)
//   release   <bucket>.reserved → <bucket>.available                      (cancel, expiry, partial capture)
//   capture   <bucket>.reserved → merchant.settlement (bank rails)
//             external.bank → merchant.settlement for the linked part     (the bank pull)
//             … or → external.card_network on card rails and gifts
//   settle    merchant.settlement → counterparty.available per disbursement
//   refund    back where it came from: the bank first, then deposit, accrue, merchant rewards
import type { WriteBatch } from '../../db/batch.ts';
import type { Executor } from '../../db/open.ts';
import type { Sourcing } from '../../db/schema.ts';
import {
  accountIds,
  type ClientCode,
  type CounterpartyCode,
  type GiftCode,
  type WalletCode,
} from '../../ledger/accounts.ts';
import { postEntry, type Posting } from '../../ledger/post.ts';
import { usableRewards, type Buckets } from '../wallets/balance.ts';

export const NO_SOURCING: Sourcing = { merchantReward: 0, accrueReward: 0, deposit: 0, linked: 0, gift: 0 };

const sourcedTotal = (s: Sourcing) => s.merchantReward + s.accrueReward + s.deposit + s.linked + s.gift;

/** What a sourcing takes from each of the wallet's available accounts (a reservation's or a direct payment's debits). */
export const availableDebits = (
  s: Pick<Sourcing, 'merchantReward' | 'accrueReward' | 'deposit'>,
): Partial<Record<WalletCode, number>> => ({
  'reward.merchant.available': s.merchantReward,
  'reward.accrue.available': s.accrueReward,
  'deposit.available': s.deposit,
});

/**
 * How a wallet pays `amount`: rewards usable on this purchase first (merchant, then accrue),
 * then deposit money, the rest from the linked account. Without `applyWalletBalance`, all of it
 * from the linked account. `purchaseAmount` (default `amount`) is the whole purchase the reward
 * minimum is checked against: a direct payment partly paid in cash still counts as one purchase.
 */
export function planWalletSourcing(
  b: Buckets,
  amount: number,
  opts: { applyWalletBalance: boolean; rewardMinimumPurchase: number; purchaseAmount?: number },
): Sourcing {
  if (!opts.applyWalletBalance) return { ...NO_SOURCING, linked: amount };
  const rewards =
    (opts.purchaseAmount ?? amount) < opts.rewardMinimumPurchase
      ? { merchant: 0, accrue: 0 }
      : usableRewards(b, amount, 0);
  const deposit = Math.min(b['deposit.available'], amount - rewards.merchant - rewards.accrue);
  return {
    merchantReward: rewards.merchant,
    accrueReward: rewards.accrue,
    deposit,
    linked: amount - rewards.merchant - rewards.accrue - deposit,
    gift: 0,
  };
}

interface Ref {
  clientId: string;
  refType: string;
  refId: string;
  now: Date;
  /** Write into the caller's batch instead of at once. */
  batch?: WriteBatch;
  /** Ledger accounts the caller holds locked (read with their balances, in id order). */
  locked?: ReadonlySet<string>;
}

const walletAccounts = (tx: Executor, walletId: string) =>
  accountIds<WalletCode>(tx, { ownerType: 'wallet', ownerId: walletId });

/** Wallet money moves from available to reserved, bucket by bucket. */
export async function reserveWallet(tx: Executor, r: Ref & { walletId: string; sourcing: Sourcing }): Promise<void> {
  const w = await walletAccounts(tx, r.walletId);
  await postEntry(
    tx,
    {
      clientId: r.clientId,
      kind: 'payment.reserve',
      refType: r.refType,
      refId: r.refId,
      now: r.now,
      postings: [
        { accountId: w['reward.merchant.available'], amount: -r.sourcing.merchantReward },
        { accountId: w['reward.merchant.reserved'], amount: r.sourcing.merchantReward },
        { accountId: w['reward.accrue.available'], amount: -r.sourcing.accrueReward },
        { accountId: w['reward.accrue.reserved'], amount: r.sourcing.accrueReward },
        { accountId: w['deposit.available'], amount: -r.sourcing.deposit },
        { accountId: w['deposit.reserved'], amount: r.sourcing.deposit },
      ],
    },
    r.batch,
    { locked: r.locked },
  );
}

/** Reserved wallet money goes back to available. */
export async function releaseWallet(tx: Executor, r: Ref & { walletId: string; sourcing: Sourcing }): Promise<void> {
  const w = await walletAccounts(tx, r.walletId);
  await postEntry(
    tx,
    {
      clientId: r.clientId,
      kind: 'payment.release',
      refType: r.refType,
      refId: r.refId,
      now: r.now,
      postings: [
        { accountId: w['reward.merchant.reserved'], amount: -r.sourcing.merchantReward },
        { accountId: w['reward.merchant.available'], amount: r.sourcing.merchantReward },
        { accountId: w['reward.accrue.reserved'], amount: -r.sourcing.accrueReward },
        { accountId: w['reward.accrue.available'], amount: r.sourcing.accrueReward },
        { accountId: w['deposit.reserved'], amount: -r.sourcing.deposit },
        { accountId: w['deposit.available'], amount: r.sourcing.deposit },
      ],
    },
    r.batch,
    { locked: r.locked },
  );
}

/** Splits a capture of `amount` from a reservation, in the spending order; the rest is released. */
export function splitCapture(reserved: Sourcing, amount: number): { captured: Sourcing; released: Sourcing } {
  let left = amount;
  const take = (n: number) => {
    const t = Math.min(n, left);
    left -= t;
    return t;
  };
  const captured: Sourcing = {
    merchantReward: take(reserved.merchantReward),
    accrueReward: take(reserved.accrueReward),
    deposit: take(reserved.deposit),
    linked: take(reserved.linked),
    gift: take(reserved.gift),
  };
  const released: Sourcing = {
    merchantReward: reserved.merchantReward - captured.merchantReward,
    accrueReward: reserved.accrueReward - captured.accrueReward,
    deposit: reserved.deposit - captured.deposit,
    linked: reserved.linked - captured.linked,
    gift: reserved.gift - captured.gift,
  };
  return { captured, released };
}

/**
 * The wallet's tracked accounts a capture moves (`captured` out of each bucket's reserved
 * account) and a release moves (`released` from reserved back to available): only the buckets
 * with money in them, so a group locks those rows and not all six of every wallet.
 */
export function movedWalletAccounts(w: Record<WalletCode, string>, captured: Sourcing, released: Sourcing): string[] {
  const ids: string[] = [];
  const bucket = (prefix: 'reward.merchant' | 'reward.accrue' | 'deposit', out: number, back: number) => {
    if (out > 0 || back > 0) ids.push(w[`${prefix}.reserved`]);
    if (back > 0) ids.push(w[`${prefix}.available`]);
  };
  bucket('reward.merchant', captured.merchantReward, released.merchantReward);
  bucket('reward.accrue', captured.accrueReward, released.accrueReward);
  bucket('deposit', captured.deposit, released.deposit);
  return ids;
}

/**
 * Captures from a wallet reservation (and the linked account): the captured money goes to the
 * merchant's settlement account (bank rails) or to the card network (card rails).
 */
export async function captureWallet(
  tx: Executor,
  r: Ref & {
    walletId: string;
    captured: Sourcing;
    released: Sourcing;
    to: 'settlement' | 'card_network';
    ext: Record<ClientCode, string>;
  },
): Promise<void> {
  const w = await walletAccounts(tx, r.walletId);
  const target = r.to === 'settlement' ? r.ext['merchant.settlement'] : r.ext['external.card_network'];
  const c = r.captured;
  await postEntry(
    tx,
    {
      clientId: r.clientId,
      kind: 'payment.capture',
      refType: r.refType,
      refId: r.refId,
      now: r.now,
      postings: [
        { accountId: w['reward.merchant.reserved'], amount: -c.merchantReward },
        { accountId: w['reward.accrue.reserved'], amount: -c.accrueReward },
        { accountId: w['deposit.reserved'], amount: -c.deposit },
        // The linked account's part is pulled from the bank now.
        { accountId: r.ext['external.bank'], amount: -c.linked },
        { accountId: target, amount: c.merchantReward + c.accrueReward + c.deposit + c.linked },
      ],
    },
    r.batch,
    { locked: r.locked },
  );
  // Named fields, not `{ ...r }`: the callers' shapes differ, and such a spread made a map per capture.
  await releaseWallet(tx, {
    clientId: r.clientId,
    refType: r.refType,
    refId: r.refId,
    now: r.now,
    batch: r.batch,
    locked: r.locked,
    walletId: r.walletId,
    sourcing: r.released,
  });
}

/** A payment straight from the wallet (POST /payments): available → settlement in one entry. */
export async function payFromWallet(
  tx: Executor,
  r: Ref & { walletId: string; sourcing: Sourcing; ext: Record<ClientCode, string> },
): Promise<void> {
  const w = await walletAccounts(tx, r.walletId);
  const s = r.sourcing;
  await postEntry(
    tx,
    {
      clientId: r.clientId,
      kind: 'payment.direct',
      refType: r.refType,
      refId: r.refId,
      now: r.now,
      postings: [
        { accountId: w['reward.merchant.available'], amount: -s.merchantReward },
        { accountId: w['reward.accrue.available'], amount: -s.accrueReward },
        { accountId: w['deposit.available'], amount: -s.deposit },
        { accountId: r.ext['external.bank'], amount: -s.linked },
        { accountId: r.ext['merchant.settlement'], amount: s.merchantReward + s.accrueReward + s.deposit + s.linked },
      ],
    },
    r.batch,
    { locked: r.locked },
  );
}

const giftAccounts = (tx: Executor, giftId: string) => accountIds<GiftCode>(tx, { ownerType: 'gift', ownerId: giftId });

/** Moves `amount` of a gift between its available and reserved accounts, as one entry of `kind`. */
async function moveGift(
  tx: Executor,
  r: Ref & { giftId: string; amount: number },
  kind: string,
  from: GiftCode,
  to: GiftCode,
): Promise<void> {
  const g = await giftAccounts(tx, r.giftId);
  await postEntry(
    tx,
    {
      clientId: r.clientId,
      kind,
      refType: r.refType,
      refId: r.refId,
      now: r.now,
      postings: [
        { accountId: g[from], amount: -r.amount },
        { accountId: g[to], amount: r.amount },
      ],
    },
    r.batch,
    { locked: r.locked },
  );
}

/** The card network holds part of a gift (card-present authorization). */
export function holdGift(tx: Executor, r: Ref & { giftId: string; amount: number }): Promise<void> {
  return moveGift(tx, r, 'gift.hold', 'gift.available', 'gift.reserved');
}

/** The held gift money goes to the card network; whatever was held beyond it is released. */
export async function captureGift(
  tx: Executor,
  r: Ref & { giftId: string; captured: number; released: number; ext: Record<ClientCode, string> },
): Promise<void> {
  const g = await giftAccounts(tx, r.giftId);
  await postEntry(
    tx,
    {
      clientId: r.clientId,
      kind: 'gift.capture',
      refType: r.refType,
      refId: r.refId,
      now: r.now,
      postings: [
        { accountId: g['gift.reserved'], amount: -(r.captured + r.released) },
        { accountId: r.ext['external.card_network'], amount: r.captured },
        { accountId: g['gift.available'], amount: r.released },
      ],
    },
    r.batch,
    { locked: r.locked },
  );
}

/** The card network's hold on a gift ends uncaptured (the payment is canceled or expires): all of it is available again. */
export function releaseGift(tx: Executor, r: Ref & { giftId: string; amount: number }): Promise<void> {
  return moveGift(tx, r, 'gift.release', 'gift.reserved', 'gift.available');
}

/** Disbursements leave the merchant's settlement for the counterparties' balances. */
export async function disburse(
  tx: Executor,
  r: Ref & { disbursement: { counterpartyId: string; amount: number }[]; ext: Record<ClientCode, string> },
): Promise<void> {
  if (r.disbursement.length === 0) return;
  const postings: Posting[] = [];
  for (const d of r.disbursement) {
    const c = await accountIds<CounterpartyCode>(tx, { ownerType: 'counterparty', ownerId: d.counterpartyId });
    postings.push({ accountId: c['counterparty.available'], amount: d.amount });
  }
  postings.push({ accountId: r.ext['merchant.settlement'], amount: -r.disbursement.reduce((s, d) => s + d.amount, 0) });
  await postEntry(
    tx,
    { clientId: r.clientId, kind: 'payment.disburse', refType: r.refType, refId: r.refId, now: r.now, postings },
    r.batch,
    { locked: r.locked },
  );
}

/**
 * Returns captured money where it came from (a refund or a failed bank pull): from `from`
 * (settlement or the card network) to the bank, the wallet's buckets or the gift.
 */
export async function returnCaptured(
  tx: Executor,
  r: Ref & {
    walletId: string | null;
    giftId: string | null;
    returned: Sourcing;
    from: 'settlement' | 'card_network';
    ext: Record<ClientCode, string>;
    kind: string;
  },
): Promise<void> {
  const s = r.returned;
  const postings: Posting[] = [
    {
      accountId: r.from === 'settlement' ? r.ext['merchant.settlement'] : r.ext['external.card_network'],
      amount: -sourcedTotal(s),
    },
    { accountId: r.ext['external.bank'], amount: s.linked },
  ];
  if (r.walletId) {
    const w = await walletAccounts(tx, r.walletId);
    postings.push(
      { accountId: w['deposit.available'], amount: s.deposit },
      { accountId: w['reward.accrue.available'], amount: s.accrueReward },
      { accountId: w['reward.merchant.available'], amount: s.merchantReward },
    );
  }
  if (r.giftId) {
    const g = await giftAccounts(tx, r.giftId);
    postings.push({ accountId: g['gift.available'], amount: s.gift });
  }
  await postEntry(
    tx,
    { clientId: r.clientId, kind: r.kind, refType: r.refType, refId: r.refId, now: r.now, postings },
    r.batch,
    { locked: r.locked },
  );
}

/**
 * What a refund of `amount` returns, given what was captured and already returned: the bank's
 * part first, then deposit money, accrue rewards, merchant rewards (rewards go back last), and
 * a gift's part.
 */
export function planRefund(captured: Sourcing, alreadyReturned: Sourcing, amount: number): Sourcing {
  let left = amount;
  const take = (k: keyof Sourcing) => {
    const t = Math.min(captured[k] - alreadyReturned[k], left);
    left -= t;
    return t;
  };
  const linked = take('linked');
  const deposit = take('deposit');
  const accrueReward = take('accrueReward');
  const merchantReward = take('merchantReward');
  const gift = take('gift');
  return { merchantReward, accrueReward, deposit, linked, gift };
}

export function addSourcing(a: Sourcing, b: Sourcing): Sourcing {
  return {
    merchantReward: a.merchantReward + b.merchantReward,
    accrueReward: a.accrueReward + b.accrueReward,
    deposit: a.deposit + b.deposit,
    linked: a.linked + b.linked,
    gift: a.gift + b.gift,
  };
}
