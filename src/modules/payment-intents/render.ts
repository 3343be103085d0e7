import { EXPIRING, type IntentRow } from './sql.ts';
import { isoTime } from '../../timestamps.ts';

/** What an intent reads as now: an expiring intent past expiresAt is Expired (the sweeper records it). */
export function effectiveStatus(i: IntentRow, now: Date): string {
  return EXPIRING.includes(i.status) && i.expiresAt <= now ? 'Expired' : i.status;
}

/** `paymentIds`: the intent's payments, oldest first. */
export function intentResource(i: IntentRow, paymentIds: string[], baseUrl: string, now: Date) {
  return {
    id: i.id,
    type: 'PaymentIntent' as const,
    attributes: {
      amount: i.amount,
      walletId: i.walletId,
      userId: i.userId,
      status: effectiveStatus(i, now) as 'Promotable',
      error: i.error,
      reference: i.reference,
      initiator: i.initiator as 'Merchant' | 'Customer',
      paymentMethod: i.paymentMethod as 'Wallet' | 'Gift',
      lookUpId: i.lookUpId,
      balance: i.balance,
      billingAddress: i.billingAddress ?? null,
      email: i.email,
      fullName: i.fullName,
      phoneNumber: i.phoneNumber,
      expiresAt: isoTime(i.expiresAt),
      updatedAt: isoTime(i.updatedAt),
      createdAt: isoTime(i.createdAt),
    },
    relationships: { payments: { data: paymentIds.map((id) => ({ type: 'Payment' as const, id })) } },
    links: { self: `${baseUrl}/api/v1/payment-intents/${i.id}` },
  };
}
