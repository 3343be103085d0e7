import { Type } from 'typebox';
import { listQuery } from '../../http/paging.ts';
import {
  Cents,
  IdempotencyKey,
  MAX_CENTS,
  Nullable,
  requestBody,
  resource,
  Timestamp,
  Uuid,
} from '../../http/schemas.ts';

const Fee = Type.Object({ amount: Type.Integer(), type: Type.String({ examples: ['ACHFee'] }) });
const Status = Type.Enum(['Pending', 'Cleared', 'Failed']);

export const Transaction = resource(
  'Transaction',
  'Transaction',
  {
    id: Type.String(),
    walletId: Type.String(),
    type: Type.Literal('NonRecurring'),
    status: Status,
    amount: Type.Integer({ description: 'Cents, including disbursed portions' }),
    linkedAccountId: Type.String(),
    charges: Type.Object({ fee: Fee }),
    failureReason: Nullable(Type.String()),
    createdAt: Timestamp(),
    clearedAt: Nullable(Timestamp()),
    failedAt: Nullable(Timestamp()),
  },
  { links: { self: Type.String() } },
);

export const OneTimeDeposit = resource(
  'OneTimeDeposit',
  'OneTimeDeposit',
  {
    id: Type.String(),
    transactionId: Type.String(),
    status: Status,
    amount: Type.Integer(),
    disbursement: Type.Array(
      Type.Object({
        counterpartyId: Type.String(),
        amount: Type.Integer(),
        fee: Type.Integer(),
        remit: Type.Boolean(),
      }),
    ),
    charges: Type.Object({ fee: Fee }),
    deductions: Type.Object({
      fee: Type.Integer({
        description: "The part of the fee taken from the wallet's credit (when no fee counterparty pays it)",
      }),
    }),
  },
  { links: { transaction: Type.String() } },
);

export const DepositBody = requestBody(
  'OneTimeDeposit',
  Type.Object(
    {
      amount: Cents({
        minimum: 100,
        description: "Cents, at least 100, at most the merchant's maxOneTimeDeposit; includes the disbursed portions",
      }),
      idempotencyKey: IdempotencyKey,
      linkedAccountId: Uuid(),
      disbursement: Type.Optional(
        Type.Array(
          Type.Object(
            { amount: Type.Integer({ minimum: 1, maximum: MAX_CENTS }), counterpartyId: Uuid() },
            { additionalProperties: false },
          ),
          { maxItems: 20 },
        ),
      ),
      risk: Type.Optional(
        Type.Object(
          { deviceSessionId: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })) },
          { additionalProperties: false },
        ),
      ),
    },
    { additionalProperties: false },
  ),
);

export const ListTransactionsQuery = listQuery({
  type: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'Only NonRecurring returns data; any other value an empty list',
    }),
  ),
});

/** Accrue's failure reasons (FailPendingTransaction, and TransactionFailed's failureReason). */
export const FAILURE_REASONS = [
  'Canceled',
  'HardDecline',
  'SoftDecline',
  'Expired',
  'InsufficientFunds',
  'Reversed',
  'Unknown',
] as const;

export const FailTransactionBody = requestBody(
  ['FailPendingTransaction', 'Transaction', 'SimulateFailTransaction'],
  Type.Object(
    {
      transactionId: Type.Optional(Uuid()),
      reason: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 200,
          examples: ['InsufficientFunds'],
          description: `With type FailPendingTransaction one of ${FAILURE_REASONS.join(', ')} (default Unknown); with the other type names any text`,
        }),
      ),
    },
    { additionalProperties: false },
  ),
);

export const schemas = [Transaction, OneTimeDeposit];
