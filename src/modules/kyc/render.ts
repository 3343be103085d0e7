import type { UserRow } from '../users/sql.ts';
import type { KycApplicationRow } from './sql.ts';
import type { KycStatus } from './schemas.ts';

export function kycResource(user: UserRow, application: KycApplicationRow | undefined, baseUrl: string) {
  return {
    id: user.id,
    type: 'Kyc' as const,
    attributes: {
      status: user.kycStatus as KycStatus,
      disclosuresAcceptedAt: user.disclosuresAcceptedAt?.toISOString() ?? null,
      submittedAt: application?.createdAt.toISOString() ?? null,
      decidedAt: application?.decidedAt?.toISOString() ?? null,
      updatedAt: user.updatedAt.toISOString(),
    },
    relationships: { user: { data: { type: 'User' as const, id: user.id } } },
    links: { self: `${baseUrl}/api/v1/users/${user.id}/kyc` },
  };
}
