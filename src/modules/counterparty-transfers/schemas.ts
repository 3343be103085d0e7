import { Type } from 'typebox';
import { listQuery } from '../../http/paging.ts';
import { Nullable, Timestamp, Uuid, requestBody, resource, IdempotencyKey } from '../../http/schemas.ts';
import { MAX_PAYOUT } from '../counterparties/schemas.ts';

const Status = Type.Enum(['Pending', 'Completed', 'Failed'], {
  description: 'A transfer moves money at once: Coffer answers `Completed` (a refused transfer is not recorded)',
});

const Metadata = Type.Record(Type.String(), Type.String({ maxLength: 500 }), {
  maxProperties: 50,
  propertyNames: { minLength: 1, maxLength: 40 },
  description:
    'Your own string values (up to 50 keys of up to 40 characters, values up to 500); serialize anything else as a string',
});

export const CounterpartyTransfer = resource(
  'CounterpartyTransfer',
  'CounterpartyTransfer',
  {
    fromCounterpartyId: Type.String(),
    toCounterpartyId: Type.String(),
    amount: Type.Integer({ description: 'Cents' }),
    status: Status,
    idempotencyKey: Type.String(),
    externalLedgerTransactionId: Nullable(Type.String({ description: 'The ledger entry that moved the money' })),
    failureReason: Nullable(Type.String()),
    metadata: Nullable(Metadata),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { description: 'A movement of funds between two counterparties of the merchant.' },
);

export const CreateTransferBody = requestBody(
  'CounterpartyTransfer',
  Type.Object(
    {
      fromCounterpartyId: Uuid(),
      toCounterpartyId: Uuid(),
      amount: Type.Integer({
        minimum: 1,
        maximum: MAX_PAYOUT,
        description: "Cents, at most the source's available balance",
      }),
      idempotencyKey: IdempotencyKey,
      metadata: Type.Optional(Metadata),
    },
    { additionalProperties: false },
  ),
);

export const ListTransfersQuery = listQuery({
  'filter[fromCounterpartyId]': Type.Optional(Uuid()),
  'filter[toCounterpartyId]': Type.Optional(Uuid()),
  'filter[status]': Type.Optional(Status),
  'filter[createdAfter]': Type.Optional(Timestamp({ description: 'Created at or after' })),
  'filter[createdBefore]': Type.Optional(Timestamp({ description: 'Created at or before' })),
});

export const schemas = [CounterpartyTransfer];
