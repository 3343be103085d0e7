import { Type } from 'typebox';
import { listQuery } from '../../http/paging.ts';
import { E164, Email, Text, Timestamp, requestBody, resource } from '../../http/schemas.ts';

const ReferenceId = () =>
  Type.String({
    minLength: 1,
    maxLength: 255,
    pattern: '^\\S(.*\\S)?$',
    'x-pattern-hint': 'a string without leading or trailing spaces',
  });

/** Each member is present only while set (the spec types them as strings; Accrue requires none). */
const Profile = Type.Object({
  firstName: Type.Optional(Type.String()),
  lastName: Type.Optional(Type.String()),
  email: Type.Optional(Type.String()),
  phoneNumber: Type.Optional(Type.String()),
});

/** Each member is present only while set (the spec types them as strings; Accrue requires none). */
const AttachedProfileAttributes = {
  referenceId: Type.Optional(Type.String()),
  stableReferenceId: Type.Optional(Type.String()),
  effectiveReferenceId: Type.Optional(Type.String({ description: 'stableReferenceId if set, else referenceId' })),
  email: Type.Optional(Type.String()),
  phoneNumber: Type.Optional(Type.String()),
};

export const User = resource(
  'User',
  'User',
  {
    disabled: Type.Boolean(),
    publicId: Type.String(),
    profile: Profile,
    attachedProfile: Type.Object(AttachedProfileAttributes),
    updatedAt: Timestamp(),
    createdAt: Timestamp(),
  },
  { links: { self: Type.String() } },
);

/** GET /users/{id} shows only these (spec: "The Get User response shows only ..."). */
export const UserSummary = resource(
  'UserSummary',
  'User',
  {
    disabled: Type.Boolean(),
    profile: Profile,
    updatedAt: Timestamp(),
    createdAt: Timestamp(),
  },
  { links: { self: Type.String() } },
);

export const AttachedProfile = resource(
  'AttachedProfile',
  'AttachedProfile',
  {
    ...AttachedProfileAttributes,
    updatedAt: Timestamp(),
  },
  { links: { self: Type.String() } },
);

/** Coffer's users are known by phone number, Accrue's CreateUser requires an e-mail: either (or both) will do. */
export const CreateUserBody = requestBody(
  'User',
  Type.Object(
    {
      phoneNumber: Type.Optional(E164()),
      email: Type.Optional(Email()),
      firstName: Type.Optional(Text(100)),
      lastName: Type.Optional(Text(100)),
    },
    { additionalProperties: false },
  ),
);

const attachedProfileAttributes = Type.Object(
  {
    referenceId: Type.Optional(ReferenceId()),
    stableReferenceId: Type.Optional(ReferenceId()),
    email: Type.Optional(Email()),
    phoneNumber: Type.Optional(E164()),
  },
  { additionalProperties: false, minProperties: 1 },
);

/** The documented body: with a `data` wrapper. */
export const AttachedProfileBody = requestBody('AttachedProfile', attachedProfileAttributes);
/** The spec's sampled body: `type` and `attributes` at the top level. Accepted too. */
export const AttachedProfileBareBody = Type.Object(
  { type: Type.Literal('AttachedProfile'), attributes: attachedProfileAttributes },
  { additionalProperties: false },
);

export const ListUsersQuery = listQuery({
  'filter[phoneNumber]': Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
  'filter[email]': Type.Optional(Type.String({ minLength: 1, maxLength: 254 })),
  'filter[referenceId]': Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
});

export const UserReferenceParams = Type.Object(
  {
    userReference: Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'A user id or one of the attached-profile reference ids',
    }),
  },
  { additionalProperties: false },
);

export const schemas = [User, UserSummary, AttachedProfile];
