// Merchant-funded rewards (Accrue's Rewards; docs/money.md). An `immediate` reward credits the
// wallet's merchant reward bucket at once, from the merchant's reward funding account
// (`Credited`). A reward issued to a phone number with no wallet yet is `preIssued`: it waits
// (`Created`, no money moves) until a wallet is opened for that number (`Claimed`: credited
// then) or its claim window ends (`Expired`). A waiting reward can be changed or cancelled; a
// credited one can be cancelled while some of it is unspent, which takes that part back.
//
// Locks: the reward row, then ledger accounts (in id order), like every other movement.
import { uuidv7 } from '../../ids.ts';
import { uniqueViolation } from '../../db/errors.ts';
import type { Db, Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import type { Page } from '../../http/paging.ts';
import { checkBodyId } from '../../http/patch-body.ts';
import { accountIds, clientAccountIds, type ClientCode, type WalletCode } from '../../ledger/accounts.ts';
import { lockAccounts, postEntry } from '../../ledger/post.ts';
import { recordEvent } from '../events/record.ts';
import type { Topic } from '../events/topics.ts';
import { effectiveStatus, rewardResource } from './render.ts';
import * as q from './sql.ts';

/** How long a pre-issued reward waits for its wallet. */
const CLAIM_WINDOW_MS = 90 * 86_400_000;

export interface RewardMetadata {
  message?: string;
  reasonCode?: string;
  costCenter?: string;
  notificationEmail?: string;
}

interface Ctx {
  clientId: string;
  baseUrl: string;
  now: Date;
}

/** The event of a reward change; `unspent` is what of a credited reward is still in its wallet. */
async function emitReward(
  tx: Executor,
  topic: Topic,
  r: q.RewardRow,
  c: { baseUrl: string; now: Date; unspent?: number },
): Promise<void> {
  await recordEvent(tx, {
    clientId: r.clientId,
    topic,
    ...(r.walletId ? { walletId: r.walletId } : {}),
    resource: rewardResource(r, { baseUrl: c.baseUrl, now: c.now, unspent: c.unspent ?? 0 }),
    now: c.now,
  });
}

/** Merchant reward funding → the wallet's merchant reward bucket. */
async function credit(
  tx: Executor,
  r: {
    clientId: string;
    rewardId: string;
    walletId: string;
    amount: number;
    ext: Record<ClientCode, string>;
    now: Date;
  },
): Promise<void> {
  const w = await accountIds<WalletCode>(tx, { ownerType: 'wallet', ownerId: r.walletId });
  await postEntry(tx, {
    clientId: r.clientId,
    kind: 'reward.merchant',
    refType: 'reward',
    refId: r.rewardId,
    postings: [
      { accountId: r.ext['merchant.rewards'], amount: -r.amount },
      { accountId: w['reward.merchant.available'], amount: r.amount },
    ],
    now: r.now,
  });
}

export interface IssueInput extends Ctx, RewardMetadata {
  walletId?: string;
  phoneNumber?: string;
  amount: number;
  clientAccounts: Record<ClientCode, string>;
}

/**
 * POST /rewards. The recipient is a wallet (`walletId`) or a phone number: a phone number whose
 * user has an Active wallet is credited at once; one with no wallet gets a pre-issued reward
 * (one may wait per number: 409 PreIssuedConflict); a Closed wallet cannot receive rewards
 * (409 WalletNotIssuable). RewardCreated.
 */
export async function issueReward(tx: Executor, i: IssueInput): Promise<q.RewardRow> {
  if ((i.walletId === undefined) === (i.phoneNumber === undefined)) {
    throw apiError('ValidationError', 'Send exactly one of `walletId` and `phoneNumber`.', {
      pointer: '/data/attributes',
    });
  }
  const meta = {
    message: i.message ?? null,
    reasonCode: i.reasonCode ?? null,
    costCenter: i.costCenter ?? null,
    notificationEmail: i.notificationEmail ?? null,
  };
  const base = {
    id: uuidv7(),
    clientId: i.clientId,
    amount: i.amount,
    phoneNumber: i.phoneNumber ?? null,
    ...meta,
    createdAt: i.now,
    updatedAt: i.now,
  };
  let walletId: string | undefined;
  if (i.walletId !== undefined) {
    const status = await q.walletStatus(tx, i.clientId, i.walletId);
    if (status === undefined)
      throw apiError('WalletNotFound', `No wallet ${i.walletId}.`, {
        status: 400,
        pointer: '/data/attributes/walletId',
      });
    if (status !== 'Active')
      throw apiError('WalletNotIssuable', `The wallet is ${status}.`, { pointer: '/data/attributes/walletId' });
    walletId = i.walletId;
  } else {
    const recipient = await q.recipientByPhone(tx, i.clientId, i.phoneNumber!);
    if (recipient?.walletId && recipient.walletStatus !== 'Active') {
      throw apiError('WalletNotIssuable', `The wallet of ${i.phoneNumber} is ${recipient.walletStatus}.`, {
        pointer: '/data/attributes/phoneNumber',
      });
    }
    walletId = recipient?.walletId ?? undefined;
    // A reward that waited for this number (its user has a wallet now, under a changed number) is claimed first.
    if (walletId)
      await claimWaitingRewards(tx, { ...i, walletId, phoneNumber: i.phoneNumber!, clientAccounts: i.clientAccounts });
  }
  let reward: q.RewardRow;
  if (walletId) {
    await credit(tx, {
      clientId: i.clientId,
      rewardId: base.id,
      walletId,
      amount: i.amount,
      ext: i.clientAccounts,
      now: i.now,
    });
    reward = await q.insertReward(tx, { ...base, walletId, kind: 'immediate', status: 'Credited', creditedAt: i.now });
  } else {
    for (const waiting of await q.lockWaitingRewards(tx, i.clientId, i.phoneNumber!)) {
      if (effectiveStatus(waiting, i.now) === 'Created') {
        throw apiError(
          'PreIssuedConflict',
          `Reward ${waiting.id} already waits for ${i.phoneNumber}; update or cancel it.`,
          {
            pointer: '/data/attributes/phoneNumber',
            existing: { id: waiting.id, href: `${i.baseUrl}/api/v1/rewards/${waiting.id}` },
          },
        );
      }
      await expire(tx, waiting, i);
    }
    try {
      // A savepoint: a concurrent pre-issue for the same number fails only this insert.
      reward = await tx.transaction((sp) =>
        q.insertReward(sp, {
          ...base,
          walletId: null,
          kind: 'preIssued',
          status: 'Created',
          claimExpiresAt: new Date(i.now.getTime() + CLAIM_WINDOW_MS),
        }),
      );
    } catch (err) {
      if (uniqueViolation(err) === 'rewards_pre_issued_phone_uq')
        throw apiError('PreIssuedConflict', `A reward already waits for ${i.phoneNumber}.`, {
          pointer: '/data/attributes/phoneNumber',
        });
      throw err;
    }
  }
  await emitReward(tx, 'RewardCreated', reward, { ...i, unspent: reward.amount });
  return reward;
}

async function expire(tx: Executor, r: q.RewardRow, c: { baseUrl: string; now: Date }): Promise<void> {
  const expired = await q.updateReward(tx, r.id, { status: 'Expired', updatedAt: c.now });
  await emitReward(tx, 'RewardUpdated', expired, c);
}

/**
 * A wallet was opened for `phoneNumber` (in the wallet's transaction): the reward waiting for
 * that number is credited to it (Claimed); one past its window is recorded Expired instead.
 */
export async function claimWaitingRewards(
  tx: Executor,
  c: Ctx & { walletId: string; phoneNumber: string; clientAccounts: Record<ClientCode, string> },
): Promise<void> {
  for (const r of await q.lockWaitingRewards(tx, c.clientId, c.phoneNumber)) {
    if (effectiveStatus(r, c.now) !== 'Created') {
      await expire(tx, r, c);
      continue;
    }
    await credit(tx, {
      clientId: c.clientId,
      rewardId: r.id,
      walletId: c.walletId,
      amount: r.amount,
      ext: c.clientAccounts,
      now: c.now,
    });
    const claimed = await q.updateReward(tx, r.id, {
      walletId: c.walletId,
      status: 'Claimed',
      creditedAt: c.now,
      updatedAt: c.now,
    });
    await emitReward(tx, 'RewardUpdated', claimed, { ...c, unspent: claimed.amount });
  }
}

/** A reward named in the path: 404 when unknown or another merchant's. */
async function getReward(
  db: Executor,
  opts: { clientId: string; rewardId: string; forUpdate?: boolean },
): Promise<q.RewardRow> {
  const r = await q.findReward(db, opts.clientId, opts.rewardId, { forUpdate: opts.forUpdate });
  if (!r) throw apiError('NotFound', `No reward ${opts.rewardId}.`); // Accrue's code for it
  return r;
}

/** A reward with what its credited part still holds (for canCancel). */
export async function showReward(
  db: Executor,
  opts: { clientId: string; rewardId: string },
): Promise<{ reward: q.RewardRow; unspent: number }> {
  const reward = await getReward(db, opts);
  return { reward, unspent: (await q.unspentOf(db, [reward.id])).get(reward.id) ?? 0 };
}

export async function listRewards(
  db: Executor,
  opts: { clientId: string; filters: q.RewardFilters; page: Page; now: Date },
) {
  const { rows, total } = await q.listRewardRows(db, opts.clientId, opts.filters, opts.page, opts.now);
  return {
    rows,
    total,
    unspent: await q.unspentOf(
      db,
      rows.filter((r) => q.CREDITED.includes(r.status)).map((r) => r.id),
    ),
  };
}

/** PATCH /rewards/{id}: only a waiting pre-issued reward (no money has moved). RewardUpdated. */
export async function updateReward(
  db: Db,
  opts: Ctx & { rewardId: string; bodyId?: string; patch: RewardMetadata & { amount?: number } },
): Promise<q.RewardRow> {
  return db.transaction(async (tx) => {
    const r = await getReward(tx, { ...opts, forUpdate: true });
    checkBodyId(opts.bodyId, r.id);
    const status = effectiveStatus(r, opts.now);
    if (r.kind !== 'preIssued' || status !== 'Created')
      throw apiError(
        'InvalidState',
        `A ${status} ${r.kind} reward cannot be changed; only a pre-issued reward waiting to be claimed can.`,
      );
    const updated = await q.updateReward(tx, r.id, { ...opts.patch, updatedAt: opts.now });
    await emitReward(tx, 'RewardUpdated', updated, opts);
    return updated;
  });
}

/**
 * DELETE /rewards/{id}: a waiting pre-issued reward is cancelled (nothing had moved); a credited
 * one gives back the part still in the wallet (merchant reward bucket → the merchant's reward
 * funding) and is cancelled; all of it spent, cancelled or expired: 409 InvalidState.
 * RewardUpdated.
 */
export async function cancelReward(db: Db, opts: Ctx & { rewardId: string }): Promise<q.RewardRow> {
  const ext = await clientAccountIds(db, opts.clientId);
  return db.transaction(async (tx) => {
    const r = await getReward(tx, { ...opts, forUpdate: true });
    const status = effectiveStatus(r, opts.now);
    let reversedAmount = 0;
    if (q.CREDITED.includes(status)) {
      const w = await accountIds<WalletCode>(tx, { ownerType: 'wallet', ownerId: r.walletId! });
      const held = w['reward.merchant.available'];
      // The bucket locked before it is read: a checkout spending from it waits, and so does another cancel.
      await lockAccounts(tx, [held]);
      reversedAmount = (await q.unspentOf(tx, [r.id])).get(r.id) ?? 0;
      if (reversedAmount === 0)
        throw apiError('InvalidState', 'All of this reward has been spent; there is nothing to take back.');
      await postEntry(
        tx,
        {
          clientId: opts.clientId,
          kind: 'reward.merchant.cancel',
          refType: 'reward',
          refId: r.id,
          postings: [
            { accountId: held, amount: -reversedAmount },
            { accountId: ext['merchant.rewards'], amount: reversedAmount },
          ],
          now: opts.now,
        },
        undefined,
        { locked: new Set([held]) },
      );
    } else if (status !== 'Created') {
      throw apiError('InvalidState', `A ${status} reward cannot be cancelled.`);
    }
    const cancelled = await q.updateReward(tx, r.id, {
      status: 'Cancelled',
      cancelledAt: opts.now,
      reversedAmount,
      updatedAt: opts.now,
    });
    await emitReward(tx, 'RewardUpdated', cancelled, opts);
    return cancelled;
  });
}

/** The most expiries one run records. */
export const EXPIRY_BATCH = 200;

/** Job: pre-issued rewards past their claim window are recorded Expired (they read so already). */
export async function expireRewardClaims(db: Db, opts: { baseUrl: string; now: () => Date }): Promise<number> {
  return db.transaction(async (tx) => {
    const now = opts.now();
    const due = await q.lockDueClaimExpiries(tx, now, EXPIRY_BATCH);
    for (const r of due) await expire(tx, r, { baseUrl: opts.baseUrl, now });
    return due.length;
  });
}
