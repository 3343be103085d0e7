import { Type } from 'typebox';
import { listQuery, query } from '../../http/paging.ts';
import {
  Cents,
  Email,
  E164,
  Nullable,
  Timestamp,
  Uuid,
  requestBody,
  resource,
  IdempotencyKey,
} from '../../http/schemas.ts';

export const INTENT_STATUSES = [
  'Promotable',
  'PromotedToPayment',
  'Invalid',
  'Expired',
  'Canceled',
  'RequiresAction',
] as const;

const Address = Type.Object(
  {
    street: Type.String({ minLength: 1, maxLength: 200 }),
    street2: Type.Optional(Type.String({ maxLength: 200 })),
    city: Type.String({ minLength: 1, maxLength: 100 }),
    state: Type.String({ minLength: 1, maxLength: 100 }),
    postalCode: Type.String({ minLength: 1, maxLength: 20 }),
    country: Type.String({ pattern: '^[A-Z]{2}$', 'x-pattern-hint': 'an ISO 3166-1 alpha-2 code such as US' }),
  },
  { additionalProperties: false },
);

export const PaymentIntent = resource(
  'PaymentIntent',
  'PaymentIntent',
  {
    amount: Type.Integer(),
    walletId: Nullable(Type.String()),
    userId: Nullable(Type.String()),
    status: Type.Enum([...INTENT_STATUSES]),
    error: Nullable(
      Type.String({
        description:
          'Why the intent is Invalid or RequiresAction: InvalidKycStatus, WalletClosed, LinkedAccountMissing, ...',
      }),
    ),
    reference: Nullable(Type.String()),
    initiator: Type.Enum(['Merchant', 'Customer'], {
      description: 'Merchant: created with walletId; Customer: from a scanned lookUpId',
    }),
    paymentMethod: Type.Enum(['Wallet', 'Gift']),
    lookUpId: Nullable(Type.String()),
    balance: Type.Object({
      available: Type.Integer({ description: 'Wallet money spendable on this amount, or the gift remaining' }),
      eligibleReward: Type.Integer({ description: 'Rewards usable on this amount' }),
      upperLimit: Type.Integer({
        description:
          'The most an authorization may be: available, plus the bank funding limit with a connected account',
      }),
    }),
    billingAddress: Nullable(Type.Object({}, { additionalProperties: Type.String() })),
    email: Nullable(Type.String()),
    fullName: Nullable(Type.String()),
    phoneNumber: Nullable(Type.String()),
    expiresAt: Timestamp(),
    updatedAt: Timestamp(),
    createdAt: Timestamp(),
  },
  {
    relationships: {
      payments: Type.Object({ data: Type.Array(Type.Object({ type: Type.Literal('Payment'), id: Type.String() })) }),
    },
    links: { self: Type.String() },
  },
);

export const ClientSummary = resource(
  'ClientSummary',
  'Client',
  { name: Type.String() },
  { description: 'The merchant, as included on payment intents' },
);

export const CreateIntentBody = requestBody(
  'CreatePaymentIntent',
  Type.Object(
    {
      amount: Cents({ minimum: 1 }),
      walletId: Type.Optional(Uuid()),
      lookUpId: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 64,
          pattern: '^[0-9A-Za-z_-]+$',
          'x-pattern-hint': 'a scanned wallet barcode or gift id',
        }),
      ),
      reference: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
      billingAddress: Type.Optional(Address),
      email: Type.Optional(Email()),
      fullName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
      phoneNumber: Type.Optional(E164()),
    },
    { additionalProperties: false },
  ),
);

/** The largest meta.processor an authorize accepts, in bytes of its JSON (checked by the route). */
export const PROCESSOR_META_MAX_BYTES = 4096;

export const AuthorizeBody = requestBody(
  'AuthorizePaymentIntent',
  Type.Object(
    {
      amount: Cents({ minimum: 1 }),
      applyWalletBalance: Type.Optional(Type.Boolean({ default: true })),
      idempotencyKey: Type.Optional(IdempotencyKey),
      reference: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
      channel: Type.Optional(
        Type.Union(
          [
            Type.String({ minLength: 1, maxLength: 64 }),
            Type.Object(
              { type: Type.Enum(['App', 'Store']), id: Type.String({ minLength: 1, maxLength: 58 }) },
              { additionalProperties: false },
            ),
          ],
          {
            description:
              "A string, or Accrue's object form `{type: App|Store, id}`, which the payment's `channel` records as `{type}:{id}` (e.g. `Store:nyc-1`)",
          },
        ),
      ),
      risk: Type.Optional(
        Type.Object(
          { deviceSessionId: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })) },
          { additionalProperties: false },
        ),
      ),
      meta: Type.Optional(
        Type.Object(
          {
            processor: Type.Optional(
              Type.Record(Type.String(), Type.Unknown(), {
                maxProperties: 50,
                description: `Passed to the card processor as is; at most ${PROCESSOR_META_MAX_BYTES} bytes as JSON.`,
              }),
            ),
          },
          { additionalProperties: false },
        ),
      ),
    },
    { additionalProperties: false },
  ),
);

export const ListIntentsQuery = listQuery({
  'filter[initiator]': Type.Optional(Type.Enum(['Merchant', 'Customer'])),
  'filter[status]': Type.Optional(Type.Enum([...INTENT_STATUSES])),
  'filter[paymentMethod]': Type.Optional(Type.Enum(['Wallet', 'Gift'])),
  sort: Type.Optional(
    Type.String({
      description:
        'Comma-separated of createdAt, updatedAt, amount, expiresAt, status; leading - for descending. Default -createdAt',
    }),
  ),
  include: Type.Optional(
    Type.String({
      description: 'Comma-separated of client, payments, balance (balance: recompute the balance block now)',
    }),
  ),
});

export const IntentQuery = query({
  include: Type.Optional(Type.String({ description: 'Comma-separated of client, payments' })),
});

export const schemas = [PaymentIntent, ClientSummary];
