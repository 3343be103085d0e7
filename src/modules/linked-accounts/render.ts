import type { LinkedAccountRow } from './sql.ts';
import { isoTime } from '../../timestamps.ts';

export function linkedAccountResource(a: LinkedAccountRow, baseUrl: string) {
  return {
    id: a.id,
    type: 'LinkedAccount' as const,
    attributes: {
      provider: a.provider,
      status: a.status as 'Connected' | 'Disconnected',
      accountType: a.accountType as 'checking' | 'savings' | 'debit' | 'creditCard',
      accountName: a.accountName,
      accountMask: a.accountMask,
      institutionName: a.institutionName,
      institutionId: a.institutionId,
      updatedAt: isoTime(a.updatedAt),
      createdAt: isoTime(a.createdAt),
    },
    links: { self: `${baseUrl}/api/v1/users/${a.userId}/linked-accounts/${a.id}` },
  };
}

export function demoBackupPaymentMethodResource(a: LinkedAccountRow) {
  return {
    id: a.id,
    type: 'DemoBackupPaymentMethod' as const,
    attributes: {
      linkedAccountId: a.id,
      accountMask: a.accountMask,
      institutionName: a.institutionName,
      accountType: a.accountType as 'debit' | 'creditCard',
      status: 'Connected' as const,
      updatedAt: isoTime(a.updatedAt),
      createdAt: isoTime(a.createdAt),
    },
  };
}
