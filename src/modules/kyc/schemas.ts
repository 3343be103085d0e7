import { Type } from 'typebox';
import { Email, Nullable, ResourceIdentifier, Text, Timestamp, requestBody, resource } from '../../http/schemas.ts';

/** Accrue's KYC statuses; Coffer reaches all but Unknown (a status Coffer never has). */
const KYC_STATUSES = [
  'NotStarted',
  'Pending',
  'ManualReview',
  'AwaitingDocuments',
  'Approved',
  'Denied',
  'Unknown',
] as const;
export type KycStatus = (typeof KYC_STATUSES)[number];

export const Kyc = resource(
  'Kyc',
  'Kyc',
  {
    status: Type.Union(
      KYC_STATUSES.map((s) => Type.Literal(s)),
      {
        description:
          'NotStarted (see disclosuresAcceptedAt), Pending (the provider is checking), ManualReview (the provider is reviewing; documents may be uploaded), ' +
          'AwaitingDocuments (the user must upload documents), Approved, Denied',
      },
    ),
    disclosuresAcceptedAt: Nullable(Timestamp()),
    submittedAt: Nullable(Timestamp({ description: 'When the latest application was submitted' })),
    documentsSubmittedAt: Nullable(
      Timestamp({ description: 'When the user last finished uploading documents for it' }),
    ),
    decidedAt: Nullable(Timestamp({ description: "When the provider's answer last changed the status" })),
    updatedAt: Timestamp(),
    createdAt: Timestamp({ description: "The KYC record's creation: the user's" }),
  },
  {
    relationships: { user: Type.Object({ data: ResourceIdentifier('User') }) },
    links: { self: Type.String() },
    description: "A user's KYC record; its id is the user's id.",
  },
);

export const DocumentVerificationLink = resource(
  'DocumentVerificationLink',
  'DocumentVerificationLink',
  {
    url: Type.String({
      format: 'uri',
      description: "The KYC provider's page where the user uploads identity documents",
    }),
    redirectUrl: Type.String({ description: 'Where that page sends the user when they are done' }),
    updatedAt: Timestamp(),
    createdAt: Timestamp(),
  },
  {
    relationships: { user: Type.Object({ data: ResourceIdentifier('User') }) },
    description: 'A link for one user to upload identity documents.',
  },
);

/** Accrue's pattern; that it is a real date in the past is checked after (domain.ts). */
const DateOfBirth = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2}$',
  'x-pattern-hint': 'a date as YYYY-MM-DD',
  description: 'YYYY-MM-DD, a real date in the past',
  examples: ['1990-01-15'],
});

/** Coffer's application body: type KycApplication, a nested address with its country. */
export const KycApplicationBody = requestBody(
  'KycApplication',
  Type.Object(
    {
      firstName: Text(100),
      lastName: Text(100),
      dateOfBirth: DateOfBirth,
      email: Email(),
      address: Type.Object(
        {
          street: Text(200),
          street2: Type.Optional(Type.String({ maxLength: 200 })),
          city: Text(100),
          state: Text(100),
          postalCode: Type.String({
            minLength: 1,
            maxLength: 20,
            pattern: '^[A-Za-z0-9 -]+$',
            'x-pattern-hint': 'letters, digits, spaces and dashes',
          }),
          country: Type.String({ pattern: '^[A-Z]{2}$', 'x-pattern-hint': 'an ISO 3166-1 alpha-2 code such as US' }),
        },
        { additionalProperties: false },
      ),
      phone: Type.Optional(
        Type.String({
          minLength: 10,
          maxLength: 32,
          pattern: '^[+0-9 ().-]+$',
          'x-pattern-hint': 'a phone number (digits, spaces, +, -, ., parentheses)',
        }),
      ),
      ipAddress: Type.Optional(
        Type.String({ minLength: 2, maxLength: 45, description: "The applicant's IPv4 or IPv6 address" }),
      ),
    },
    { additionalProperties: false },
  ),
);

/** Accrue's application body: type Kyc, a flat US address, phone required. */
export const AccrueKycApplicationBody = requestBody(
  'Kyc',
  Type.Object(
    {
      ipAddress: Type.Optional(
        Type.String({ minLength: 2, maxLength: 45, description: "The applicant's IPv4 or IPv6 address" }),
      ),
      firstName: Text(100),
      lastName: Text(100),
      phone: Type.String({
        minLength: 10,
        maxLength: 32,
        pattern: '^[+0-9 ().-]+$',
        'x-pattern-hint': 'a phone number (digits, spaces, +, -, ., parentheses)',
      }),
      dateOfBirth: DateOfBirth,
      email: Email(),
      street: Text(200, { minLength: 3 }),
      street2: Type.Optional(Type.String({ maxLength: 200 })),
      city: Text(100, { minLength: 2 }),
      state: Text(100, { minLength: 2 }),
      postalCode: Type.String({
        pattern: '^\\d{5}(-\\d{4})?$',
        'x-pattern-hint': 'a US ZIP code (12345 or 12345-6789)',
      }),
    },
    { additionalProperties: false },
  ),
  { description: "Accrue's shape: the address is a US one." },
);

export const DocumentVerificationLinkBody = requestBody(
  'DocumentVerificationLink',
  Type.Object(
    {
      redirectUrl: Type.String({
        format: 'uri',
        maxLength: 2048,
        description: 'http(s): where the document page sends the user when they are done',
      }),
    },
    { additionalProperties: false },
  ),
);

export const schemas = [Kyc, DocumentVerificationLink];
