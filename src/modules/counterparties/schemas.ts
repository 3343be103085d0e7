import { Type } from 'typebox';
import { listQuery } from '../../http/paging.ts';
import { Nullable, Text, Timestamp, requestBody, resource, IdempotencyKey } from '../../http/schemas.ts';

/** Accrue's spelling in responses; requests take it or lower case. */
const AccountType = Type.Enum(['Checking', 'Savings']);
const AccountTypeIn = Type.Enum(['Checking', 'Savings', 'checking', 'savings'], {
  description: '`Checking` or `Savings` (lower case is accepted too)',
});

/** Accrue caps one payout (and one transfer) at the int32 range. */
export const MAX_PAYOUT = 2_147_483_647;

const BankAccount = (description: string, accountNumber: string) =>
  Type.Object(
    {
      accountNumber: Type.String({ description: accountNumber }),
      routingNumber: Type.String(),
      accountType: AccountType,
    },
    { description },
  );

export const Counterparty = resource(
  'Counterparty',
  'Counterparty',
  {
    label: Type.String(),
    accountNumber: Type.String({
      deprecated: true,
      description: 'Deprecated: `externalBankAccount.accountNumber` (masked, `****` and the last four digits)',
    }),
    accountNumberLast4: Type.String({ description: 'The account number is stored encrypted and never shown in full' }),
    routingNumber: Type.String({ deprecated: true, description: 'Deprecated: `externalBankAccount.routingNumber`' }),
    accountType: Type.Enum(['Checking', 'Savings'], {
      deprecated: true,
      description: 'Deprecated: `externalBankAccount.accountType`',
    }),
    externalBankAccount: BankAccount(
      "The payee's own bank account, where payouts go",
      'Masked: `****` and the last four digits',
    ),
    internalBankAccount: Type.Optional(
      BankAccount(
        "The counterparty's deposit account: money sent here lands on its balance (`CounterpartyIncomingPayment`). Provisioned in the sandbox; absent when none is.",
        'In full: it is an account to pay into',
      ),
    ),
    balance: Type.Object({
      pending: Type.Integer({ description: 'Disbursed from deposits that have not cleared' }),
      available: Type.Integer({
        description:
          'Cleared disbursements, settled payments, incoming payments and transfers in, less fees, payouts and transfers out (may be negative: fees)',
      }),
    }),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { links: { self: Type.String() } },
);

export const CreateCounterpartyBody = requestBody(
  ['CreateCounterparty', 'Counterparty'],
  Type.Object(
    {
      label: Type.Optional(
        Text(100, {
          description: 'Default: the account type and its last four digits ("Checking account ending 6789")',
        }),
      ),
      accountNumber: Type.String({ pattern: '^[0-9]{4,17}$', 'x-pattern-hint': '4 to 17 digits' }),
      routingNumber: Type.String({ pattern: '^[0-9]{9}$', 'x-pattern-hint': 'a 9-digit ABA routing number' }),
      accountType: AccountTypeIn,
    },
    { additionalProperties: false },
  ),
);

export const UpdateCounterpartyBody = requestBody(
  ['UpdateCounterparty', 'Counterparty'],
  Type.Object({ label: Type.Optional(Text(100)) }, { additionalProperties: false }),
  { description: 'Only the label can change; the bank account cannot.' },
);

export const ListCounterpartiesQuery = listQuery({});

const PAYOUT_STATUSES = [
  'Approved',
  'Cancelled',
  'Completed',
  'Denied',
  'Failed',
  'NeedsApproval',
  'Pending',
  'Processing',
  'Returned',
  'Reversed',
  'Sent',
] as const;
const PayoutStatus = Type.Enum([...PAYOUT_STATUSES], {
  description:
    "Coffer uses `Pending` (not yet with the bank), `Sent`, `Completed` and `Returned`; the others are Accrue's and never occur here",
});

export const CounterpartyPayout = resource(
  'CounterpartyPayout',
  'CounterpartyPayout',
  {
    amount: Type.Integer({ description: 'Cents' }),
    status: PayoutStatus,
    description: Nullable(Type.String()),
    effectiveDate: Type.String({ format: 'date', description: 'The day the payout was made (UTC), YYYY-MM-DD' }),
    counterpartyId: Type.String(),
    returnCode: Nullable(Type.String({ description: 'The bank return code (R01, ...) of a Returned payout' })),
    returnReason: Nullable(Type.String()),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { description: "A transfer of funds from a counterparty's available balance to its bank account." },
);

export const CreatePayoutBody = requestBody(
  'CreateCounterpartyPayout',
  Type.Object(
    {
      amount: Type.Integer({
        minimum: 1,
        maximum: MAX_PAYOUT,
        description: 'Cents, at most the available balance and 2147483647 per payout',
      }),
      idempotencyKey: IdempotencyKey,
    },
    { additionalProperties: false },
  ),
);

export const ListPayoutsQuery = listQuery({
  'filter[status]': Type.Optional(PayoutStatus),
  'filter[minAmount]': Type.Optional(Type.Integer({ minimum: 0 })),
  'filter[maxAmount]': Type.Optional(Type.Integer({ minimum: 0 })),
  'filter[createdAfter]': Type.Optional(Timestamp({ description: 'Created at or after' })),
  'filter[createdBefore]': Type.Optional(Timestamp({ description: 'Created at or before' })),
  'filter[effectiveDateFrom]': Type.Optional(Type.String({ format: 'date' })),
  'filter[effectiveDateTo]': Type.Optional(Type.String({ format: 'date' })),
});

export const SimulateDepositBody = requestBody(
  'SimulateCounterpartyDeposit',
  Type.Object(
    { amount: Type.Integer({ minimum: 1, maximum: MAX_PAYOUT, description: 'Cents' }) },
    { additionalProperties: false },
  ),
);

export const SimulatePayoutReturnBody = requestBody(
  'SimulateCounterpartyPayoutReturn',
  Type.Object(
    {
      returnCode: Type.Optional(
        Type.String({ pattern: '^R[0-9]{2}$', 'x-pattern-hint': 'an ACH return code such as R01' }),
      ),
      returnReason: Type.Optional(Text(200)),
    },
    { additionalProperties: false },
  ),
);

export const schemas = [Counterparty, CounterpartyPayout];
