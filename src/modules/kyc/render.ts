import type { UserRow } from '../users/sql.ts';
import type { KycApplicationRow, KycDocumentLinkRow } from './sql.ts';
import type { KycStatus } from './schemas.ts';

export function kycResource(user: UserRow, application: KycApplicationRow | undefined, baseUrl: string) {
  return {
    id: user.id,
    type: 'Kyc' as const,
    attributes: {
      status: user.kycStatus as KycStatus,
      disclosuresAcceptedAt: user.disclosuresAcceptedAt?.toISOString() ?? null,
      submittedAt: application?.createdAt.toISOString() ?? null,
      documentsSubmittedAt: application?.documentsSubmittedAt?.toISOString() ?? null,
      decidedAt: application?.decidedAt?.toISOString() ?? null,
      updatedAt: user.updatedAt.toISOString(),
      createdAt: user.createdAt.toISOString(),
    },
    relationships: { user: { data: { type: 'User' as const, id: user.id } } },
    links: { self: `${baseUrl}/api/v1/users/${user.id}/kyc/status` },
  };
}

export function documentLinkResource(link: KycDocumentLinkRow) {
  return {
    id: link.id,
    type: 'DocumentVerificationLink' as const,
    attributes: { url: link.url!, redirectUrl: link.redirectUrl, updatedAt: link.updatedAt.toISOString(), createdAt: link.createdAt.toISOString() },
    relationships: { user: { data: { type: 'User' as const, id: link.userId } } },
  };
}
