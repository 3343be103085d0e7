// The provider adapter protocol (docs/providers.md): every path, request body and answer, in
// one place for Coffer's clients and the reference adapter. Requests and answers are JSON,
// signed both ways with Standard Webhooks; a POST carries `Idempotency-Key: <reference>`.
// Amounts are integer US cents. An answer that does not match its schema is an error.
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { Type, type Static, type TSchema } from 'typebox';
import { KYC_ANSWERS } from '../kyc.ts';

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/** Coffer's reference for an operation: the Idempotency-Key, and what the answer must name. */
const Reference = Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9:_-]+$' });
const Amount = Type.Integer({ minimum: 1, maximum: 100_000_000_000 });
const Short = (max = 200) => Type.String({ minLength: 1, maxLength: max });

const KycApplicationRequest = Type.Object(
  {
    type: Type.Literal('KycApplication'),
    reference: Reference,
    userId: Reference,
    firstName: Short(),
    lastName: Short(),
    dateOfBirth: Type.String({ format: 'date' }),
    email: Short(320),
    address: Type.Object({
      street: Short(),
      street2: Type.Optional(Type.String({ maxLength: 200 })),
      city: Short(),
      state: Short(),
      postalCode: Short(20),
      country: Type.String({ pattern: '^[A-Z]{2}$' }),
    }),
    phone: Type.Optional(Short(32)),
    ipAddress: Type.Optional(Short(45)),
  },
  { additionalProperties: false },
);
const KycApplicationAnswer = Type.Object({
  reference: Reference,
  status: Type.Union(KYC_ANSWERS.map((s) => Type.Literal(s))),
});

/** A link to the provider's page where the user uploads identity documents. */
const KycDocumentLinkRequest = Type.Object(
  {
    type: Type.Literal('KycDocumentLink'),
    reference: Reference,
    /** The application's reference. */
    application: Reference,
    userId: Reference,
    /** Where the provider's page sends the user when they are done. */
    redirectUrl: Type.String({ minLength: 1, maxLength: 2048 }),
  },
  { additionalProperties: false },
);
const KycDocumentLinkAnswer = Type.Object({
  reference: Reference,
  url: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://' }),
});

/** The user has finished uploading documents for the application; the answer is where it stands. */
const KycDocumentsRequest = Type.Object(
  { type: Type.Literal('KycDocuments'), reference: Reference, application: Reference },
  { additionalProperties: false },
);

const LinkAccountRequest = Type.Object(
  {
    type: Type.Literal('LinkAccount'),
    reference: Reference,
    userId: Reference,
    /** What the user's linking flow with the provider produced (Plaid Link's public_token, say). */
    token: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
    institutionName: Type.Optional(Short(100)),
    accountType: Type.Optional(Type.Union([Type.Literal('checking'), Type.Literal('savings')])),
    accountMask: Type.Optional(Type.String({ pattern: '^[0-9]{4}$' })),
  },
  { additionalProperties: false },
);
const LinkedAccountAnswer = Type.Object({
  reference: Reference,
  provider: Short(100),
  externalId: Short(),
  accountType: Type.Union([Type.Literal('checking'), Type.Literal('savings')]),
  accountName: Short(),
  accountMask: Type.String({ pattern: '^[0-9]{4}$' }),
  institutionName: Short(),
  institutionId: Short(),
});

const DeactivateAccountRequest = Type.Object(
  { type: Type.Literal('DeactivateAccount'), reference: Reference, externalId: Short() },
  { additionalProperties: false },
);
const DeactivationAnswer = Type.Object({ reference: Reference, deactivated: Type.Literal(true) });

const TRANSFER_STATUSES = ['pending', 'settled', 'failed'] as const;

const BankTransferRequest = Type.Object(
  {
    type: Type.Literal('BankTransfer'),
    reference: Reference,
    /** pull: from the user's account into Coffer's; push: from Coffer's to the user's. */
    direction: Type.Union([Type.Literal('pull'), Type.Literal('push')]),
    amount: Amount,
    /** The bank-linking provider's id of the user's account (externalId): every transfer but a counterparty's payout. */
    accountId: Type.Optional(Short()),
    /** A counterparty's account by its numbers (a payout, always a push): sent instead of accountId. */
    bankAccount: Type.Optional(
      Type.Object(
        {
          routingNumber: Type.String({ pattern: '^[0-9]{9}$' }),
          accountNumber: Type.String({ pattern: '^[0-9]{4,17}$' }),
          accountType: Type.Union([Type.Literal('checking'), Type.Literal('savings')]),
          holderName: Type.String({ minLength: 1, maxLength: 200 }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
const BankTransferAnswer = Type.Object({
  reference: Reference,
  providerRef: Short(),
  status: Type.Union(TRANSFER_STATUSES.map((s) => Type.Literal(s))),
  failureReason: Type.Optional(Type.String({ maxLength: 500 })),
});

const IssueCardRequest = Type.Object(
  { type: Type.Literal('Card'), reference: Reference, amount: Amount },
  { additionalProperties: false },
);
const CardAnswer = Type.Object({
  reference: Reference,
  number: Type.String({ pattern: '^[0-9]{12,19}$' }),
  expirationMonth: Type.Integer({ minimum: 1, maximum: 12 }),
  expirationYear: Type.Integer({ minimum: 2000, maximum: 2200 }),
  cvc: Type.String({ pattern: '^[0-9]{3,4}$' }),
});

const CardAuthorizationRequest = Type.Object(
  {
    type: Type.Literal('CardAuthorization'),
    reference: Reference,
    clientId: Reference,
    amount: Amount,
    /** The merchant's opaque processor data (meta.processor), passed through. */
    meta: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
);
const CardAuthorizationAnswer = Type.Object({
  reference: Reference,
  approved: Type.Boolean(),
  code: Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_.-]+$' }),
  data: Type.Record(Type.String(), Type.Unknown()),
});

/** Every operation: its method, path (relative to the port's base URL) and bodies. */
export const OPERATIONS = {
  submitKycApplication: {
    method: 'POST',
    path: '/v1/kyc/applications',
    request: KycApplicationRequest,
    answer: KycApplicationAnswer,
  },
  getKycApplication: {
    method: 'GET',
    path: '/v1/kyc/applications/:reference',
    request: null,
    answer: KycApplicationAnswer,
  },
  createKycDocumentLink: {
    method: 'POST',
    path: '/v1/kyc/document-links',
    request: KycDocumentLinkRequest,
    answer: KycDocumentLinkAnswer,
  },
  submitKycDocuments: {
    method: 'POST',
    path: '/v1/kyc/documents',
    request: KycDocumentsRequest,
    answer: KycApplicationAnswer,
  },
  linkAccount: {
    method: 'POST',
    path: '/v1/bank-linking/accounts',
    request: LinkAccountRequest,
    answer: LinkedAccountAnswer,
  },
  deactivateAccount: {
    method: 'POST',
    path: '/v1/bank-linking/deactivations',
    request: DeactivateAccountRequest,
    answer: DeactivationAnswer,
  },
  createBankTransfer: {
    method: 'POST',
    path: '/v1/bank-transfers',
    request: BankTransferRequest,
    answer: BankTransferAnswer,
  },
  getBankTransfer: { method: 'GET', path: '/v1/bank-transfers/:reference', request: null, answer: BankTransferAnswer },
  issueCard: { method: 'POST', path: '/v1/cards', request: IssueCardRequest, answer: CardAnswer },
  authorizeCard: {
    method: 'POST',
    path: '/v1/card-authorizations',
    request: CardAuthorizationRequest,
    answer: CardAuthorizationAnswer,
  },
} as const satisfies Record<string, { method: 'GET' | 'POST'; path: string; request: TSchema | null; answer: TSchema }>;

export type OperationName = keyof typeof OPERATIONS;
export type RequestOf<N extends OperationName> = (typeof OPERATIONS)[N]['request'] extends TSchema
  ? Static<(typeof OPERATIONS)[N]['request']>
  : never;
export type AnswerOf<N extends OperationName> = Static<(typeof OPERATIONS)[N]['answer']>;

const ajv = new Ajv({ allErrors: false, strict: false, removeAdditional: false, coerceTypes: false });
addFormats(ajv, ['date']);
const compiled = new Map<TSchema, ValidateFunction>();

/** The schema's validator (compiled once). */
export function validatorOf(schema: TSchema): ValidateFunction {
  let v = compiled.get(schema);
  if (!v) compiled.set(schema, (v = ajv.compile(schema as object)));
  return v;
}

/** Where the first validation error is, for a log line that names no value. */
export function firstErrorOf(v: ValidateFunction): string {
  const e = v.errors?.[0];
  return e ? `${e.instancePath || '/'} ${e.message ?? e.keyword}` : 'invalid';
}
