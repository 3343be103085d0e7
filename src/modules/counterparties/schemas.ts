import { Type } from 'typebox';
import { listQuery } from '../../http/paging.ts';
import { Timestamp, requestBody, resource } from '../../http/schemas.ts';

export const Counterparty = resource(
  'Counterparty',
  'Counterparty',
  {
    label: Type.String(),
    accountType: Type.Enum(['checking', 'savings']),
    accountNumberLast4: Type.String({ description: 'The account number is stored encrypted and never shown in full' }),
    routingNumber: Type.String(),
    balance: Type.Object({
      pending: Type.Integer({ description: 'Disbursed from deposits that have not cleared' }),
      available: Type.Integer({ description: 'Cleared disbursements less charged fees (may be negative)' }),
    }),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { links: { self: Type.String() } },
);

export const CreateCounterpartyBody = requestBody(
  'Counterparty',
  Type.Object(
    {
      label: Type.String({ minLength: 1, maxLength: 100 }),
      accountNumber: Type.String({ pattern: '^[0-9]{4,17}$', 'x-pattern-hint': '4 to 17 digits' }),
      routingNumber: Type.String({ pattern: '^[0-9]{9}$', 'x-pattern-hint': 'a 9-digit ABA routing number' }),
      accountType: Type.Enum(['checking', 'savings']),
    },
    { additionalProperties: false },
  ),
);

export const ListCounterpartiesQuery = listQuery({});

export const schemas = [Counterparty];
