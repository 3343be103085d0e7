// Users as JSON:API resources.
import type { UserRow, UserSummaryRow } from './sql.ts';

export const userPath = (id: string) => `/api/v1/users/${id}`;

function profile(u: UserSummaryRow) {
  return { firstName: u.firstName, lastName: u.lastName, email: u.email, phoneNumber: u.phoneNumber };
}

export function attachedProfileAttributes(u: UserRow) {
  return {
    referenceId: u.referenceId,
    stableReferenceId: u.stableReferenceId,
    effectiveReferenceId: u.stableReferenceId ?? u.referenceId,
    email: u.attachedEmail,
    phoneNumber: u.attachedPhoneNumber,
  };
}

export function userResource(u: UserRow, baseUrl: string) {
  return {
    id: u.id,
    type: 'User' as const,
    attributes: {
      disabled: u.disabled,
      publicId: u.publicId,
      profile: profile(u),
      attachedProfile: attachedProfileAttributes(u),
      updatedAt: u.updatedAt.toISOString(),
      createdAt: u.createdAt.toISOString(),
    },
    links: { self: baseUrl + userPath(u.id) },
  };
}

export function userSummaryResource(u: UserSummaryRow, baseUrl: string) {
  return {
    id: u.id,
    type: 'User' as const,
    attributes: { disabled: u.disabled, profile: profile(u), updatedAt: u.updatedAt.toISOString(), createdAt: u.createdAt.toISOString() },
    links: { self: baseUrl + userPath(u.id) },
  };
}

export function attachedProfileResource(u: UserRow, baseUrl: string) {
  return {
    id: u.id,
    type: 'AttachedProfile' as const,
    attributes: { ...attachedProfileAttributes(u), updatedAt: u.updatedAt.toISOString() },
    links: { self: `${baseUrl}${userPath(u.id)}/attached-profile` },
  };
}
