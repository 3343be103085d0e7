import { Type } from 'typebox';
import { createdRangeParams, listQuery, query } from '../../http/paging.ts';
import { Cents, Nullable, ResourceIdentifier, Timestamp, Uuid, requestBody, resource } from '../../http/schemas.ts';

const Split = Type.Object({
  deposit: Type.Integer(),
  reward: Type.Object({ accrue: Type.Integer(), merchant: Type.Integer(), total: Type.Integer() }),
  total: Type.Integer(),
});

const Balance = Type.Object({
  available: Split,
  pending: Split,
  reserved: Type.Object({ total: Type.Integer() }),
  total: Split,
  withdrawable: Type.Optional(
    Type.Object(
      { total: Type.Integer() },
      { description: 'With includeWithdrawableAmount=true: available deposit money (rewards are never withdrawable)' },
    ),
  ),
});

const walletAttributes = {
  status: Type.Enum(['Active', 'Closed']),
  closedAt: Nullable(Timestamp()),
  updatedAt: Timestamp(),
  createdAt: Timestamp(),
};
const walletRelationships = { user: Type.Object({ data: ResourceIdentifier('User') }) };

export const Wallet = resource('Wallet', 'Wallet', walletAttributes, {
  relationships: walletRelationships,
  links: { self: Type.String() },
});

export const WalletWithBalance = resource(
  'WalletBalance',
  'Wallet',
  { ...walletAttributes, balance: Balance },
  {
    relationships: walletRelationships,
    links: { self: Type.String() },
    description: 'A wallet with its balance (amounts in cents)',
  },
);

export const WalletBarcode = resource(
  'WalletBarcode',
  'WalletBarcode',
  {
    lookUpId: Type.String({ description: '16 digits' }),
    walletId: Type.String(),
    expiresAt: Timestamp(),
    usageLimit: Nullable(Type.Integer({ description: 'Null: no limit' })),
    usageCount: Type.Integer(),
    referenceId: Nullable(
      Type.String({ description: "The wallet user's reference id (stableReferenceId, else referenceId)" }),
    ),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  {
    description:
      "A scan-and-pay barcode. `id` is the barcode's own id, except from GET /simulation/barcodes/{lookUpId}, where (as in Accrue's contract) it is the wallet's id; `walletId` is the wallet's id everywhere.",
  },
);

export const CreateWalletBody = requestBody('Wallet', Type.Object({ userId: Uuid() }, { additionalProperties: false }));

const Include = Type.Optional(Type.String({ description: 'Comma-separated: user' }));

export const WalletQuery = query({ include: Include });

export const BalanceQuery = query({
  include: Include,
  userReference: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: "The wallet's user id or attached-profile reference id; must match",
    }),
  ),
  purchaseAmount: Type.Optional(
    Cents({ description: 'Show only the rewards usable on a purchase of this many cents' }),
  ),
  includeWithdrawableAmount: Type.Optional(Type.Boolean()),
});

export const ListWalletsQuery = listQuery({
  'filter[phoneNumber]': Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
  'filter[email]': Type.Optional(Type.String({ minLength: 1, maxLength: 254 })),
  'filter[referenceId]': Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  'filter[userId]': Type.Optional(Uuid({ description: "The wallet's user" })),
  'filter[status]': Type.Optional(Type.Enum(['Active', 'Closed'])),
  ...createdRangeParams,
});

export const LookUpParams = Type.Object(
  {
    lookUpId: Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: '^[0-9A-Za-z_-]+$',
      'x-pattern-hint': 'a scanned lookup id',
    }),
  },
  { additionalProperties: false },
);

/** The longest a sandbox barcode lives: 24 hours. */
export const BARCODE_MAX_TTL_S = 86_400;

export const SimulateBarcodeBody = requestBody(
  ['GenerateWalletBarcode', 'WalletBarcode', 'SimulateWalletBarcode'],
  Type.Object(
    {
      expiresAt: Type.Optional(
        Timestamp({
          description: 'When it expires: in the future, at most 24 hours ahead. Default 10 minutes from now',
        }),
      ),
      ttlSeconds: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: BARCODE_MAX_TTL_S,
          description: 'Instead of expiresAt: seconds from now (default 600)',
        }),
      ),
      usageLimit: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: 1000,
          description:
            'Default: no limit with type GenerateWalletBarcode (as Accrue documents), 1 with the other type names or no body',
        }),
      ),
      reuseActive: Type.Optional(
        Type.Boolean({
          description:
            'true: answer with the newest barcode of the wallet still usable, if there is one, instead of making a new one',
        }),
      ),
    },
    { additionalProperties: false },
  ),
);

export const ListBarcodesQuery = listQuery({
  includeExpired: Type.Optional(
    Type.Boolean({ description: 'Also list barcodes past their expiresAt (default false)' }),
  ),
});

export const schemas = [Wallet, WalletWithBalance, WalletBarcode];
