// Users as JSON:API resources.
import type { UserRow, UserSummaryRow } from './sql.ts';
import { isoTime } from '../../timestamps.ts';

export const userPath = (id: string) => `/api/v1/users/${id}`;

/** The profile's members that are set; an unset one is left out (Accrue types them as strings and requires none). */
function profile(u: UserSummaryRow) {
  const members: { firstName?: string; lastName?: string; email?: string; phoneNumber?: string } = {};
  if (u.firstName !== null) members.firstName = u.firstName;
  if (u.lastName !== null) members.lastName = u.lastName;
  if (u.email !== null) members.email = u.email;
  if (u.phoneNumber !== null) members.phoneNumber = u.phoneNumber;
  return members;
}

/** The attached profile's members that are set; an unset member is left out (the spec types them as strings, Accrue does not require them). */
function attachedProfileAttributes(u: UserRow) {
  const members: {
    referenceId?: string;
    stableReferenceId?: string;
    effectiveReferenceId?: string;
    email?: string;
    phoneNumber?: string;
  } = {};
  if (u.referenceId !== null) members.referenceId = u.referenceId;
  if (u.stableReferenceId !== null) members.stableReferenceId = u.stableReferenceId;
  const effective = u.stableReferenceId ?? u.referenceId;
  if (effective !== null) members.effectiveReferenceId = effective;
  if (u.attachedEmail !== null) members.email = u.attachedEmail;
  if (u.attachedPhoneNumber !== null) members.phoneNumber = u.attachedPhoneNumber;
  return members;
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
      updatedAt: isoTime(u.updatedAt),
      createdAt: isoTime(u.createdAt),
    },
    links: { self: baseUrl + userPath(u.id) },
  };
}

export function userSummaryResource(u: UserSummaryRow, baseUrl: string) {
  return {
    id: u.id,
    type: 'User' as const,
    attributes: {
      disabled: u.disabled,
      profile: profile(u),
      updatedAt: isoTime(u.updatedAt),
      createdAt: isoTime(u.createdAt),
    },
    links: { self: baseUrl + userPath(u.id) },
  };
}

export function attachedProfileResource(u: UserRow, baseUrl: string) {
  return {
    id: u.id,
    type: 'AttachedProfile' as const,
    attributes: { ...attachedProfileAttributes(u), updatedAt: isoTime(u.updatedAt) },
    links: { self: `${baseUrl}${userPath(u.id)}/attached-profile` },
  };
}
