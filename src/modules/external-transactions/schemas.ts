import { Type } from 'typebox';
import { listQuery } from '../../http/paging.ts';
import { MAX_CENTS, Nullable, Text, Timestamp, Uuid, resource } from '../../http/schemas.ts';

const Kind = Type.Enum(['Purchase', 'Void', 'Refund']);
const METHODS = ['Cash', 'DebitCard', 'CreditCard', 'Wire', 'GiftCard', 'Wallet', 'Other', 'Unknown'] as const;
export type PaymentMethod = (typeof METHODS)[number];

const Source = Type.Object(
  {
    id: Text(255, { description: "The transaction's id in the system it comes from; (type, id) is recorded once" }),
    createdAt: Timestamp({ description: 'When it happened there' }),
    customerId: Type.Optional(
      Text(255, {
        description: 'Your customer: a user id or one of its reference ids links the transaction to that user',
      }),
    ),
  },
  { additionalProperties: false },
);

const Payment = Type.Object(
  {
    amount: Type.Integer({ minimum: 0, maximum: MAX_CENTS, description: 'Cents charged with this method' }),
    method: Type.Optional(Type.Enum([...METHODS], { description: 'Default `Unknown`' })),
  },
  { additionalProperties: false },
);

const ToManyOf = (type: string) =>
  Type.Object({ data: Type.Array(Type.Object({ id: Type.String(), type: Type.Literal(type) })) });
const Relationships = { linkedExternalTransaction: ToManyOf('ExternalTransaction'), user: ToManyOf('User') };

export const ExternalTransaction = resource(
  'ExternalTransaction',
  'ExternalTransaction',
  {
    type: Kind,
    linkedExternalTransactionId: Nullable(
      Type.String({ description: 'The Purchase a Void or Refund is about; null for a Purchase' }),
    ),
    source: Type.Object({ id: Type.String(), createdAt: Timestamp(), customerId: Type.Optional(Type.String()) }),
    channel: Nullable(Type.String()),
    payments: Type.Array(Type.Object({ amount: Type.Integer(), method: Type.Enum([...METHODS]) })),
    payload: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'Absent when none was sent' })),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  {
    relationships: Relationships,
    description: 'A purchase, void or refund made outside Coffer, recorded for the merchant; it moves no money.',
  },
);

export const ExternalTransactionReference = resource(
  'ExternalTransactionReference',
  'ExternalTransaction',
  { id: Type.String(), sourceId: Type.String(), createdAt: Timestamp(), updatedAt: Timestamp() },
  { relationships: Relationships },
);

const CreateExternalTransaction = Type.Object(
  {
    type: Type.Literal('ExternalTransaction'),
    attributes: Type.Object(
      {
        type: Type.Optional(Type.Enum(['Purchase', 'Void', 'Refund'], { description: 'Default `Purchase`' })),
        linkedExternalTransactionId: Type.Optional(
          Uuid({ description: 'Required for a Void or a Refund: the Purchase it is about' }),
        ),
        source: Source,
        channel: Type.Optional(Text(255, { description: 'Where it happened: a store, an app, a checkout' })),
        payments: Type.Array(Payment, {
          minItems: 1,
          maxItems: 20,
          description: 'Every method and the amount charged with it; together the total',
        }),
        payload: Type.Optional(
          Type.Object(
            {},
            { additionalProperties: true, description: 'Anything else you want kept with it (a JSON object)' },
          ),
        ),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export const AddExternalTransactionsBody = Type.Object(
  { data: Type.Array(CreateExternalTransaction, { minItems: 1, maxItems: 100 }) },
  { additionalProperties: false },
);

export const ListExternalTransactionsQuery = listQuery({
  'filter[phoneNumber]': Type.Optional(
    Type.String({ minLength: 1, maxLength: 32, description: "The linked user's phone number" }),
  ),
  'filter[userId]': Type.Optional(Uuid({ description: 'The linked user' })),
  'filter[sourceId]': Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
});

export const schemas = [ExternalTransaction, ExternalTransactionReference];
