import { Type } from 'typebox';
import { Email, Nullable, ResourceIdentifier, Text, Timestamp, requestBody, resource } from '../../http/schemas.ts';

export const KYC_STATUSES = ['NotStarted', 'DisclosuresAccepted', 'Pending', 'Approved', 'AwaitingDocuments', 'Declined'] as const;
export type KycStatus = (typeof KYC_STATUSES)[number];

export const Kyc = resource(
  'Kyc',
  'Kyc',
  {
    status: Type.Union(KYC_STATUSES.map((s) => Type.Literal(s))),
    disclosuresAcceptedAt: Nullable(Timestamp()),
    submittedAt: Nullable(Timestamp({ description: 'When the latest application was submitted' })),
    decidedAt: Nullable(Timestamp({ description: 'When the provider decided the latest application' })),
    updatedAt: Timestamp(),
  },
  {
    relationships: { user: Type.Object({ data: ResourceIdentifier('User') }) },
    links: { self: Type.String() },
    description: "A user's KYC record; its id is the user's id.",
  },
);

export const KycApplicationBody = requestBody(
  'KycApplication',
  Type.Object(
    {
      firstName: Text(100),
      lastName: Text(100),
      dateOfBirth: Type.String({ format: 'date', description: 'YYYY-MM-DD, in the past' }),
      email: Email(),
      address: Type.Object(
        {
          street: Text(200),
          street2: Type.Optional(Type.String({ maxLength: 200 })),
          city: Text(100),
          state: Text(100),
          postalCode: Type.String({ minLength: 1, maxLength: 20, pattern: '^[A-Za-z0-9 -]+$', 'x-pattern-hint': 'letters, digits, spaces and dashes' }),
          country: Type.String({ pattern: '^[A-Z]{2}$', 'x-pattern-hint': 'an ISO 3166-1 alpha-2 code such as US' }),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  ),
);

export const schemas = [Kyc];
