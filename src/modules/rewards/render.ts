import type { RewardRow } from './sql.ts';
import { isoTime, isoTimeOrNull } from '../../timestamps.ts';

/** What a reward reads as now: a waiting pre-issued reward past its claim window is Expired (the job records it). */
export function effectiveStatus(r: RewardRow, now: Date): string {
  return r.status === 'Created' && r.claimExpiresAt !== null && r.claimExpiresAt <= now ? 'Expired' : r.status;
}

/** `unspent`: what of a credited reward is still in its wallet (unspentOf). */
export function rewardResource(r: RewardRow, c: { baseUrl: string; now: Date; unspent: number }) {
  const status = effectiveStatus(r, c.now);
  const waiting = r.kind === 'preIssued' && status === 'Created';
  return {
    id: r.id,
    type: 'Reward' as const,
    attributes: {
      kind: r.kind as 'immediate' | 'preIssued',
      amount: r.amount,
      walletId: r.walletId,
      status: status as 'Credited',
      canUpdate: waiting,
      canCancel: waiting || ((status === 'Credited' || status === 'Claimed') && c.unspent > 0),
      claimExpiresAt: isoTimeOrNull(r.claimExpiresAt),
      message: r.message,
      reasonCode: r.reasonCode,
      costCenter: r.costCenter,
      notificationEmail: r.notificationEmail,
      phoneNumber: r.phoneNumber,
      reversedAmount: r.reversedAmount,
      updatedAt: isoTime(r.updatedAt),
      createdAt: isoTime(r.createdAt),
    },
    links: { self: `${c.baseUrl}/api/v1/rewards/${r.id}` },
  };
}
