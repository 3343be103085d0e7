import { Type } from 'typebox';
import { listQuery, query } from '../../http/paging.ts';
import { Cents, MAX_CENTS, Nullable, Timestamp, Uuid, requestBody, resource } from '../../http/schemas.ts';
import { IdempotencyKey } from '../transactions/schemas.ts';

export const PAYMENT_STATUSES = ['Created', 'Processing', 'Sent', 'Failed', 'Canceled', 'Returned'] as const;

const Disbursement = Type.Object({ counterpartyId: Type.String(), amount: Type.Integer(), fee: Type.Integer(), remit: Type.Boolean() });

export const Payment = resource(
  'Payment',
  'Payment',
  {
    id: Type.String(),
    status: Type.Enum([...PAYMENT_STATUSES]),
    amount: Type.Integer({ description: 'Authorized (or paid) cents' }),
    capturedAmount: Type.Integer(),
    refundedAmount: Type.Integer(),
    rail: Type.Enum(['bank', 'card', 'gift'], { description: 'How the payment settles: bank transfer, a single-use virtual card, or a gift card' }),
    channel: Nullable(Type.String()),
    reference: Nullable(Type.String()),
    disbursement: Type.Array(Disbursement),
    externalPayments: Type.Array(Type.Object({ method: Type.String(), amount: Type.Integer() })),
    failureReason: Nullable(Type.String()),
    expiresAt: Timestamp({ description: 'An uncaptured authorization is released after this' }),
    updatedAt: Timestamp(),
    createdAt: Timestamp(),
  },
  {
    relationships: {
      paymentIntent: Type.Object({
        data: Nullable(Type.Object({ type: Type.Literal('PaymentIntent'), id: Type.String() })),
        links: Type.Optional(Type.Object({ self: Type.String() })),
      }),
      refunds: Type.Optional(Type.Object({ data: Type.Array(Type.Object({ type: Type.Literal('Refund'), id: Type.String() })) })),
    },
    links: { self: Type.String(), virtualDebitCard: Type.Optional(Type.String({ description: 'Card rails and gifts: where the single-use card is read' })) },
    // Card-processor answers ride along as opaque data (spec: included[].meta.processor).
    meta: { processor: Type.Record(Type.String(), Type.Unknown()) },
  },
);

export const Refund = resource('Refund', 'Refund', {
  paymentId: Type.String(),
  amount: Type.Integer(),
  status: Type.Literal('Succeeded'),
  returned: Type.Object(
    { linked: Type.Integer(), deposit: Type.Integer(), accrueReward: Type.Integer(), merchantReward: Type.Integer(), gift: Type.Integer() },
    { description: 'Where the money went back to: the bank, the wallet buckets, the gift' },
  ),
  createdAt: Timestamp(),
});

export const VirtualDebitCard = resource('VirtualDebitCard', 'VirtualDebitCard', {
  number: Type.String({ description: 'Luhn-valid; use it once, for exactly the authorized amount, and never store it' }),
  expirationMonth: Type.String(),
  expirationYear: Type.String(),
  cvc: Type.String(),
  billingAddress: Nullable(
    Type.Object({
      street: Type.String(),
      street2: Type.Optional(Type.String()),
      city: Type.String(),
      state: Type.String(),
      postalCode: Type.String(),
      country: Type.String(),
    }),
  ),
});

export const CreatePaymentBody = requestBody(
  'CreatePayment',
  Type.Object(
    {
      walletId: Uuid(),
      amount: Cents({ minimum: 1 }),
      linkedAccountId: Type.Optional(Uuid({ description: "Pays what the wallet and externalPayments do not; the user's connected account" })),
      channel: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      reference: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
      externalPayments: Type.Optional(
        Type.Array(Type.Object({ method: Type.String({ minLength: 1, maxLength: 32, examples: ['Cash'] }), amount: Type.Integer({ minimum: 1, maximum: MAX_CENTS }) }, { additionalProperties: false }), {
          maxItems: 10,
        }),
      ),
      disbursement: Type.Optional(
        Type.Array(
          Type.Object({ counterpartyId: Uuid(), amount: Type.Integer({ minimum: 1, maximum: MAX_CENTS }), remit: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
          { maxItems: 20 },
        ),
      ),
      idempotencyKey: Type.Optional(IdempotencyKey),
    },
    { additionalProperties: false },
  ),
);

export const CaptureBody = requestBody('CapturePayment', Type.Object({ amount: Cents({ minimum: 1 }) }, { additionalProperties: false }));

export const RefundBody = requestBody(['Refund', 'RefundPayment'], Type.Object({ amount: Cents({ minimum: 1 }), idempotencyKey: IdempotencyKey }, { additionalProperties: false }));

export const CardNetworkBody = requestBody(
  ['CardNetworkEvent', 'SimulateCardNetwork'],
  Type.Object({ amount: Type.Optional(Cents({ minimum: 1, description: 'Default: all that the step allows' })) }, { additionalProperties: false }),
);

export const ListPaymentsQuery = listQuery({
  'filter[status]': Type.Optional(Type.Enum([...PAYMENT_STATUSES])),
  'filter[paymentIntentId]': Type.Optional(Uuid()),
  'filter[reference]': Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  'filter[channel]': Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  sort: Type.Optional(Type.String({ description: 'Comma-separated of createdAt, updatedAt, amount, status; leading - for descending. Default -createdAt' })),
  include: Type.Optional(Type.String({ description: 'Comma-separated of paymentIntent, captures, refunds' })),
});

export const PaymentQuery = query({ include: Type.Optional(Type.String({ description: 'Comma-separated of paymentIntent, refunds' })) });

export const schemas = [Payment, Refund, VirtualDebitCard];
