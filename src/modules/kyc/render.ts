import type { UserRow } from '../users/sql.ts';
import type { KycApplicationRow, KycDocumentLinkRow } from './sql.ts';
import type { KycStatus } from './schemas.ts';
import { isoTime, isoTimeOrNull } from '../../timestamps.ts';

export function kycResource(user: UserRow, application: KycApplicationRow | undefined, baseUrl: string) {
  return {
    id: user.id,
    type: 'Kyc' as const,
    attributes: {
      status: user.kycStatus as KycStatus,
      disclosuresAcceptedAt: isoTimeOrNull(user.disclosuresAcceptedAt),
      submittedAt: isoTimeOrNull(application?.createdAt),
      documentsSubmittedAt: isoTimeOrNull(application?.documentsSubmittedAt),
      decidedAt: isoTimeOrNull(application?.decidedAt),
      updatedAt: isoTime(user.updatedAt),
      createdAt: isoTime(user.createdAt),
    },
    relationships: { user: { data: { type: 'User' as const, id: user.id } } },
    links: { self: `${baseUrl}/api/v1/users/${user.id}/kyc/status` },
  };
}

export function documentLinkResource(link: KycDocumentLinkRow) {
  return {
    id: link.id,
    type: 'DocumentVerificationLink' as const,
    attributes: {
      url: link.url!,
      redirectUrl: link.redirectUrl,
      updatedAt: isoTime(link.updatedAt),
      createdAt: isoTime(link.createdAt),
    },
    relationships: { user: { data: { type: 'User' as const, id: link.userId } } },
  };
}
