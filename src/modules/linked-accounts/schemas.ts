import { Type } from 'typebox';
import { listQuery } from '../../http/paging.ts';
import { Timestamp, requestBody, resource } from '../../http/schemas.ts';

export const LinkedAccount = resource(
  'LinkedAccount',
  'LinkedAccount',
  {
    provider: Type.String({ examples: ['Plaid'] }),
    status: Type.Union([Type.Literal('Connected'), Type.Literal('Disconnected')]),
    accountType: Type.Union([Type.Literal('checking'), Type.Literal('savings')]),
    accountName: Type.String(),
    accountMask: Type.String({ description: 'Last four digits' }),
    institutionName: Type.String(),
    institutionId: Type.String(),
    updatedAt: Timestamp(),
    createdAt: Timestamp(),
  },
  { links: { self: Type.String() } },
);

export const ListLinkedAccountsQuery = listQuery({});

export const SimulateLinkedAccountBody = requestBody(
  ['LinkedAccount', 'SimulateLinkedAccount'],
  Type.Object(
    {
      institutionName: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
      accountType: Type.Optional(Type.Union([Type.Literal('checking'), Type.Literal('savings')])),
      accountMask: Type.Optional(Type.String({ pattern: '^[0-9]{4}$', 'x-pattern-hint': 'four digits' })),
    },
    { additionalProperties: false },
  ),
);

/** The admin API's link (the operator's wallet app, after the user's linking flow with the provider). */
export const LinkAccountBody = requestBody(
  'LinkedAccount',
  Type.Object(
    {
      token: Type.String({ minLength: 1, maxLength: 2000, description: "What the user's linking flow with the bank-linking provider produced (Plaid Link's public_token, say); passed to the adapter" }),
    },
    { additionalProperties: false },
  ),
);

export const schemas = [LinkedAccount];
