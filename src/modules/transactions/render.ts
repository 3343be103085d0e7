import type { TransactionRow } from './sql.ts';
import { isoTime, isoTimeOrNull } from '../../timestamps.ts';

export function transactionResource(t: TransactionRow, baseUrl: string) {
  return {
    id: t.id,
    type: 'Transaction' as const,
    attributes: {
      id: t.id,
      walletId: t.walletId,
      type: 'NonRecurring' as const,
      status: t.status as 'Pending' | 'Cleared' | 'Failed',
      amount: t.amount,
      linkedAccountId: t.linkedAccountId,
      charges: { fee: { amount: t.feeAmount, type: t.feeType } },
      failureReason: t.failureReason,
      createdAt: isoTime(t.createdAt),
      clearedAt: isoTimeOrNull(t.clearedAt),
      failedAt: isoTimeOrNull(t.failedAt),
    },
    links: { self: `${baseUrl}/api/v1/wallets/${t.walletId}/transactions/${t.id}` },
  };
}

export function depositResource(t: TransactionRow, baseUrl: string) {
  return {
    id: t.id,
    type: 'OneTimeDeposit' as const,
    attributes: {
      id: t.id,
      transactionId: t.id,
      status: t.status as 'Pending' | 'Cleared' | 'Failed',
      amount: t.amount,
      disbursement: t.disbursement,
      charges: { fee: { amount: t.feeAmount, type: t.feeType } },
      deductions: { fee: t.feeDeducted },
    },
    links: { transaction: `${baseUrl}/api/v1/wallets/${t.walletId}/transactions/${t.id}` },
  };
}
