import { Type } from 'typebox';
import { listQuery } from '../../http/paging.ts';
import { updateBodies } from '../../http/patch-body.ts';
import {
  Cents,
  E164,
  Email,
  Nullable,
  Text,
  Timestamp,
  Uuid,
  requestBody,
  resource,
  IdempotencyKey,
} from '../../http/schemas.ts';

const REWARD_STATUSES = ['Credited', 'Created', 'Claimed', 'Expired', 'Cancelled'] as const;

export const Reward = resource(
  'Reward',
  'Reward',
  {
    kind: Type.Enum(['immediate', 'preIssued'], {
      description:
        '`immediate`: credited to a wallet at issue; `preIssued`: issued to a phone number without a wallet, credited when one is opened',
    }),
    amount: Type.Integer(),
    walletId: Nullable(Type.String({ description: 'The wallet credited; null while a pre-issued reward waits' })),
    status: Type.Enum([...REWARD_STATUSES]),
    canUpdate: Type.Boolean({ description: 'PATCH is allowed: a pre-issued reward still waiting (`Created`)' }),
    canCancel: Type.Boolean({
      description:
        'DELETE is allowed: a waiting pre-issued reward, or a credited one with money still unspent in the wallet',
    }),
    claimExpiresAt: Nullable(Timestamp({ description: 'A pre-issued reward not claimed by then is Expired' })),
    message: Nullable(Type.String()),
    reasonCode: Nullable(Type.String()),
    costCenter: Nullable(Type.String()),
    notificationEmail: Nullable(Type.String()),
    phoneNumber: Nullable(Type.String({ description: 'The number it was issued to (null when issued by walletId)' })),
    reversedAmount: Type.Integer({ description: 'What cancelling took back from the wallet: the part not yet spent' }),
    updatedAt: Timestamp(),
    createdAt: Timestamp(),
  },
  { links: { self: Type.String() } },
);

const metadata = {
  message: Type.Optional(Text(500)),
  reasonCode: Type.Optional(Text(255)),
  costCenter: Type.Optional(Text(255)),
  notificationEmail: Type.Optional(Email()),
};

export const IssueRewardBody = requestBody(
  'IssueReward',
  Type.Object(
    {
      walletId: Type.Optional(Uuid({ description: 'The wallet to credit; or phoneNumber' })),
      phoneNumber: Type.Optional(E164({ description: "The recipient's phone number; or walletId" })),
      amount: Cents({ minimum: 1 }),
      idempotencyKey: IdempotencyKey,
      ...metadata,
    },
    { additionalProperties: false },
  ),
);

export const UpdateRewardBodies = updateBodies(
  ['UpdateReward', 'Reward'],
  Type.Object(
    { amount: Type.Optional(Cents({ minimum: 1 })), ...metadata },
    { additionalProperties: false, minProperties: 1 },
  ),
);

export const ListRewardsQuery = listQuery({
  'filter[phoneNumber]': Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
  'filter[status]': Type.Optional(Type.Enum([...REWARD_STATUSES])),
});

export const schemas = [Reward];
