import { Type } from 'typebox';
import { listQuery } from '../../http/paging.ts';
import { Timestamp, requestBody, resource } from '../../http/schemas.ts';

export const LinkedAccount = resource(
  'LinkedAccount',
  'LinkedAccount',
  {
    provider: Type.String({ examples: ['Plaid'] }),
    status: Type.Union([Type.Literal('Connected'), Type.Literal('Disconnected')]),
    accountType: Type.Enum(['checking', 'savings', 'debit', 'creditCard'], {
      description: "debit and creditCard: a card (the sandbox's demo backup payment methods)",
    }),
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
      token: Type.String({
        minLength: 1,
        maxLength: 2000,
        description:
          "What the user's linking flow with the bank-linking provider produced (Plaid Link's public_token, say); passed to the adapter",
      }),
    },
    { additionalProperties: false },
  ),
);

export const DemoBackupPaymentMethod = resource(
  'DemoBackupPaymentMethod',
  'DemoBackupPaymentMethod',
  {
    linkedAccountId: Type.String(),
    accountMask: Type.String({ description: 'Last four digits of the card' }),
    institutionName: Type.String({ examples: ['Visa'] }),
    accountType: Type.Enum(['debit', 'creditCard']),
    status: Type.Literal('Connected'),
    updatedAt: Timestamp(),
    createdAt: Timestamp(),
  },
  { description: "A demo card linked as a backup payment method (sandbox); its id is the linked account's." },
);

/** The sandbox's test cards, named as Checkout.com names them (Accrue's testCardType). */
const TEST_CARD_TYPES = [
  'visa-us-credit',
  'visa-gb-credit',
  'visa-gb-debit',
  'mastercard-mu-credit',
  'mastercard-de-debit',
] as const;
export type TestCardType = (typeof TEST_CARD_TYPES)[number];

/** Accrue's body: plain JSON, not a JSON:API document. */
export const DemoBackupPaymentMethodBody = Type.Object(
  { testCardType: Type.Optional(Type.Enum([...TEST_CARD_TYPES], { description: 'Default visa-us-credit' })) },
  { additionalProperties: false },
);

export const schemas = [LinkedAccount, DemoBackupPaymentMethod];
