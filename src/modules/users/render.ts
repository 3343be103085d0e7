// Users as JSON:API resources.
import type { UserRow, UserSummaryRow } from './sql.ts';

export const userPath = (id: string) => `/api/v1/users/${id}`;

function profile(u: UserSummaryRow) {
  return { firstName: u.firstName, lastName: u.lastName, email: u.email, phoneNumber: u.phoneNumber };
}

/** The attached profile's members that are set; an unset member is left out (the spec types them as strings, Accrue does not require them). */
export function attachedProfileAttributes(u: UserRow) {
  const members = {
    referenceId: u.referenceId,
    stableReferenceId: u.stableReferenceId,
    effectiveReferenceId: u.stableReferenceId ?? u.referenceId,
    email: u.attachedEmail,
    phoneNumber: u.attachedPhoneNumber,
  };
  return Object.fromEntries(Object.entries(members).filter(([, v]) => v !== null)) as { [K in keyof typeof members]?: string };
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
