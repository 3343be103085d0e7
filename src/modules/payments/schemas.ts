import { Type } from 'typebox';
import { listQuery, query } from '../../http/paging.ts';
import { updateBodies } from '../../http/patch-body.ts';
import {
  Cents,
  MAX_CENTS,
  Nullable,
  Timestamp,
  Uuid,
  requestBody,
  resource,
  IdempotencyKey,
} from '../../http/schemas.ts';

const PAYMENT_STATUSES = ['Created', 'Processing', 'Sent', 'Failed', 'Canceled', 'Returned'] as const;

const Disbursement = Type.Object({
  counterpartyId: Type.String(),
  amount: Type.Integer(),
  fee: Type.Integer(),
  remit: Type.Boolean(),
});

export const Payment = resource(
  'Payment',
  'Payment',
  {
    id: Type.String(),
    status: Type.Enum([...PAYMENT_STATUSES]),
    amount: Type.Integer({ description: 'Authorized (or paid) cents' }),
    capturedAmount: Type.Integer(),
    refundedAmount: Type.Integer(),
    rail: Type.Enum(['bank', 'card', 'gift'], {
      description: 'How the payment settles: bank transfer, a single-use virtual card, or a gift card',
    }),
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
      refunds: Type.Optional(
        Type.Object({ data: Type.Array(Type.Object({ type: Type.Literal('Refund'), id: Type.String() })) }),
      ),
      captures: Type.Optional(
        Type.Object({ data: Type.Array(Type.Object({ type: Type.Literal('Capture'), id: Type.String() })) }),
      ),
    },
    links: {
      self: Type.String(),
      virtualDebitCard: Type.String({
        description:
          'Where the single-use card is read (card rails and gifts); on every payment, as Accrue requires, though a bank-rail payment has no card (404 `CardNotFound`)',
      }),
    },
    // Card-processor answers ride along as opaque data (spec: included[].meta.processor).
    meta: { processor: Type.Record(Type.String(), Type.Unknown()) },
  },
);

/** Accrue's refund statuses. Coffer's refunds return the money when they are made: always `Sent`. */
const REFUND_STATUSES = ['Pending', 'Sent', 'Failed', 'Waiting'] as const;

export const Refund = resource('Refund', 'Refund', {
  paymentId: Type.String(),
  amount: Type.Integer(),
  status: Type.Enum([...REFUND_STATUSES], {
    description: 'Always `Sent`: the money is back where it came from when the refund is made',
  }),
  returned: Type.Object(
    {
      linked: Type.Integer(),
      deposit: Type.Integer(),
      accrueReward: Type.Integer(),
      merchantReward: Type.Integer(),
      gift: Type.Integer(),
    },
    { description: 'Where the money went back to: the bank, the wallet buckets, the gift' },
  ),
  updatedAt: Timestamp(),
  createdAt: Timestamp(),
});

export const VirtualDebitCard = resource(
  'VirtualDebitCard',
  'VirtualDebitCard',
  {
    number: Type.String({
      description: 'Luhn-valid; use it once, for exactly the authorized amount, and never store it',
    }),
    expirationMonth: Type.String(),
    expirationYear: Type.String(),
    cvc: Type.String(),
    billingAddress: Nullable(
      Type.Object(
        {
          street: Type.String(),
          street2: Type.Optional(Type.String()),
          city: Type.String(),
          state: Type.String(),
          postalCode: Type.String(),
          country: Type.String(),
        },
        {
          description:
            "The intent's billing address, else the address of the user's latest KYC application; null when neither exists",
        },
      ),
    ),
  },
  {
    relationships: {
      payment: Type.Object({ data: Type.Object({ type: Type.Literal('Payment'), id: Type.String() }) }),
      paymentIntent: Type.Object({
        data: Nullable(Type.Object({ type: Type.Literal('PaymentIntent'), id: Type.String() })),
      }),
    },
  },
);

export const CreatePaymentBody = requestBody(
  'CreatePayment',
  Type.Object(
    {
      walletId: Uuid(),
      amount: Cents({ minimum: 1 }),
      linkedAccountId: Type.Optional(
        Uuid({ description: "Pays what the wallet and externalPayments do not; the user's connected account" }),
      ),
      channel: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      reference: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
      externalPayments: Type.Optional(
        Type.Array(
          Type.Object(
            {
              method: Type.String({ minLength: 1, maxLength: 32, examples: ['Cash'] }),
              amount: Type.Integer({ minimum: 1, maximum: MAX_CENTS }),
            },
            { additionalProperties: false },
          ),
          {
            maxItems: 10,
          },
        ),
      ),
      disbursement: Type.Optional(
        Type.Array(
          Type.Object(
            {
              counterpartyId: Uuid(),
              amount: Type.Integer({ minimum: 1, maximum: MAX_CENTS }),
              remit: Type.Optional(Type.Boolean()),
            },
            { additionalProperties: false },
          ),
          { maxItems: 20 },
        ),
      ),
      idempotencyKey: Type.Optional(IdempotencyKey),
    },
    { additionalProperties: false },
  ),
);

export const CaptureBody = requestBody(
  'CapturePayment',
  Type.Object({ amount: Cents({ minimum: 1 }) }, { additionalProperties: false }),
);

export const RefundBody = requestBody(
  ['Refund', 'RefundPayment'],
  Type.Object({ amount: Cents({ minimum: 1 }), idempotencyKey: IdempotencyKey }, { additionalProperties: false }),
);

const networkAmount = Type.Optional(Cents({ minimum: 1, description: 'Default: all that the step allows' }));

/** The sandbox card network's bodies: Coffer's type names and Accrue's `Simulate…` one for each step. */
export const CardNetworkBodies = {
  auth: requestBody(
    ['SimulateCardAuthorization', 'CardNetworkEvent', 'SimulateCardNetwork'],
    Type.Object({ amount: networkAmount }, { additionalProperties: false }),
  ),
  capture: requestBody(
    ['SimulateCardCapture', 'CardNetworkEvent', 'SimulateCardNetwork'],
    Type.Object(
      {
        amount: networkAmount,
        authorizationRequestId: Type.Optional(
          Uuid({
            description:
              "An Approved AuthorizationRequest of this payment (recorded on the capture); the amount may be up to all the card's approved authorizations",
          }),
        ),
      },
      { additionalProperties: false },
    ),
  ),
  'auth-capture': requestBody(
    ['SimulateCardAuthorizationCapture', 'CardNetworkEvent', 'SimulateCardNetwork'],
    Type.Object({ amount: networkAmount }, { additionalProperties: false }),
  ),
};

export const AuthorizationRequest = resource('AuthorizationRequest', 'AuthorizationRequest', {
  paymentId: Type.String(),
  walletId: Nullable(Type.String({ description: 'Null for a gift payment' })),
  status: Type.Enum(['Declined', 'Approved', 'Pending', 'Canceled'], {
    description:
      'The sandbox network answers at once, so never `Pending`; `Canceled` once the payment is canceled uncaptured',
  }),
  amount: Type.Integer(),
  createdAt: Timestamp(),
  updatedAt: Timestamp(),
});

const CAPTURE_METHODS = ['Direct', 'BankRails', 'VirtualDebitCard'] as const;

/** Accrue's Capture and CardCapture in one resource (both are type `Capture`). */
export const Capture = resource('Capture', 'Capture', {
  id: Type.String(),
  paymentId: Type.String(),
  amount: Type.Integer(),
  success: Type.Boolean({ description: 'False for a capture the card network refused (over what was authorized)' }),
  method: Type.Enum([...CAPTURE_METHODS], {
    description:
      '`Direct` for POST /payments, `BankRails` for a captured bank-rail payment, `VirtualDebitCard` for card and gift payments',
  }),
  reference: Nullable(Type.String({ description: "The payment's reference" })),
  authorizationRequestId: Nullable(Type.String()),
  capturedAt: Nullable(Timestamp({ description: 'Null for a refused capture' })),
  updatedAt: Timestamp(),
  createdAt: Timestamp(),
});

export const ListAuthorizationRequestsQuery = listQuery({});
export const ListCapturesQuery = listQuery({
  'filter[method]': Type.Optional(Type.Enum([...CAPTURE_METHODS])),
  'filter[success]': Type.Optional(Type.Boolean()),
  sort: Type.Optional(
    Type.String({ description: 'Comma-separated of createdAt, amount; leading - for descending. Default -createdAt' }),
  ),
  include: Type.Optional(Type.String({ description: '`payment`' })),
});

export const UpdatePaymentBodies = updateBodies(
  'Payment',
  Type.Object(
    { reference: Nullable(Type.String({ minLength: 1, maxLength: 255 })) },
    { additionalProperties: false, minProperties: 1 },
  ),
);

export const IncreaseAuthorizationBody = requestBody(
  'IncreaseAuthorization',
  Type.Object(
    {
      increase: Cents({ minimum: 1, description: 'Cents to add to the authorization, reserved from the wallet' }),
      idempotencyKey: Type.Optional(IdempotencyKey),
    },
    { additionalProperties: false },
  ),
);

export const ListPaymentsQuery = listQuery({
  'filter[status]': Type.Optional(Type.Enum([...PAYMENT_STATUSES])),
  'filter[paymentIntentId]': Type.Optional(Uuid()),
  'filter[reference]': Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  'filter[channel]': Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  sort: Type.Optional(
    Type.String({
      description:
        'Comma-separated of createdAt, updatedAt, amount, status; leading - for descending. Default -createdAt',
    }),
  ),
  include: Type.Optional(Type.String({ description: 'Comma-separated of paymentIntent, captures, refunds' })),
});

export const PaymentQuery = query({
  include: Type.Optional(Type.String({ description: 'Comma-separated of paymentIntent, refunds' })),
});
export const IntentIncludeQuery = query({
  include: Type.Optional(Type.String({ description: '`paymentIntent` (always included)' })),
});

export const schemas = [Payment, Refund, VirtualDebitCard, AuthorizationRequest, Capture];
