import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { apiError } from '../../http/errors.ts';
import { query } from '../../http/paging.ts';
import {
  COMMON_ERRORS,
  Nullable,
  ResourceIdentifier,
  Timestamp,
  document,
  idParams,
  ref,
  requestBody,
  resource,
  responses,
} from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import type { ClientSettings } from '../clients/settings.ts';
import {
  createWidgetSession,
  findWidgetWallet,
  issueLinkedAccountWidgetData,
  issueWidgetPayload,
  type WalletFilters,
} from './domain.ts';
import { WIDGET_TYPES } from './token.ts';

const TAGS = ['Widgets'];

const WalletWidgetDto = Type.Object(
  {
    dynamic: Type.Object(
      { value: Type.Integer({ description: 'The amount the widget shows: `available`, in cents' }) },
      { description: "Accrue's member (it requires it): the widget's figure" },
    ),
    walletId: Type.String(),
    userId: Type.String(),
    purchaseAmount: Nullable(Type.Integer()),
    available: Type.Integer({
      description: 'Cents spendable on the purchase (rewards only as far as usable on purchaseAmount)',
    }),
    eligibleReward: Type.Integer({
      description: 'Cents of rewards usable on purchaseAmount (all available rewards without one)',
    }),
    rewardMinimumPurchase: Type.Integer({ description: "The merchant's smallest purchase rewards apply to, in cents" }),
  },
  { description: "The payload's figures, for merchants that draw their own widget (includeDto=true)" },
);

const WalletWidgetData = resource(
  'WalletWidgetData',
  'WalletWidgetData',
  {
    payload: Type.String({
      description:
        'Base64 of a signed token naming the client, wallet and user; give it to main.js (`data-wallet-widget` or `servicePay.setWalletWidgetData`)',
    }),
    expiresAt: Timestamp({ description: '15 minutes after issue' }),
    dto: Type.Optional(WalletWidgetDto),
  },
  {
    relationships: { wallet: Type.Object({ data: ResourceIdentifier('Wallet') }) },
    links: { self: Type.String() },
    description: "A wallet's widget payload; its id is the token's id.",
  },
);

const LinkedAccountWidgetData = resource(
  'LinkedAccountWidgetData',
  'LinkedAccountWidgetData',
  {
    payload: Type.String({
      description:
        'Base64 of a signed token naming the client, the payment intent, its wallet and user, and the linked account; only the widget host reads it',
    }),
    dto: Type.Object({ institutionName: Type.String(), accountMask: Type.String({ description: 'Last four digits' }) }),
    expiresAt: Timestamp({ description: '15 minutes after issue' }),
    updatedAt: Timestamp({ description: "The linked account's" }),
    createdAt: Timestamp({ description: "The linked account's" }),
  },
  {
    relationships: {
      paymentIntent: Type.Object({ data: ResourceIdentifier('PaymentIntent') }),
      linkedAccount: Type.Object({ data: ResourceIdentifier('LinkedAccount') }),
    },
    links: { self: Type.String() },
    description:
      "The linked account that pays what the wallet does not cover of a payment intent; its id is the token's id.",
  },
);

const WidgetSession = resource(
  'WidgetSession',
  'WidgetSession',
  {
    sessionToken: Type.String({
      description: '`wgt_session_` and a signed token naming the client and the widget type; pass it to the widget',
    }),
    widgetType: Type.Enum([...WIDGET_TYPES]),
    expiresAt: Timestamp({ description: '15 minutes after issue' }),
    createdAt: Timestamp(),
  },
  { description: "A widget session; its id is the token's id." },
);

export const schemas = [WalletWidgetData, LinkedAccountWidgetData, WidgetSession];

const PurchaseAmount = Type.Optional(
  Type.Integer({
    minimum: 0,
    maximum: 1_000_000_000_000,
    description: 'Purchase amount in cents: the amount widgets use when the page gives none',
  }),
);
const IncludeDto = Type.Optional(Type.Boolean({ description: "true: add `dto`, the payload's figures in plain JSON" }));
const ByIdQuery = query({ purchaseAmount: PurchaseAmount, includeDto: IncludeDto });
const FindQuery = query({
  'filter[userReference]': Type.Optional(
    Type.String({ minLength: 1, maxLength: 255, description: "The user's id, stableReferenceId or referenceId" }),
  ),
  'filter[secondaryUserReference]': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: "The user's referenceId (or stableReferenceId), for when the stable one may not be on file yet",
    }),
  ),
  'filter[phoneNumber]': Type.Optional(
    Type.String({ minLength: 1, maxLength: 32, description: "The user's phone number (E.164)" }),
  ),
  purchaseAmount: PurchaseAmount,
  includeDto: IncludeDto,
});
type FindQueryValue = {
  'filter[userReference]'?: string;
  'filter[secondaryUserReference]'?: string;
  'filter[phoneNumber]'?: string;
};
const filtersOf = (q: FindQueryValue): WalletFilters => ({
  userReference: q['filter[userReference]'],
  secondaryUserReference: q['filter[secondaryUserReference]'],
  phoneNumber: q['filter[phoneNumber]'],
});

const PAYLOAD_DESCRIPTION =
  "Call it from your backend (it needs the secret) and pass `payload` to the page. The widget host verifies it and shows only this wallet's data; " +
  "it expires after 15 minutes, and ends early when the user's phone number changes through a verified profile update. " +
  '`purchaseAmount` (cents) goes into the payload as the amount widgets use when the page gives none; `includeDto=true` adds the figures as `dto`. A closed wallet is 400 `WalletClosed`.';
const FIND_DESCRIPTION =
  'The wallet of the user the filters name: `filter[userReference]` (user id, stableReferenceId or referenceId), `filter[secondaryUserReference]` (a reference id, for when the stable one may not be on file yet), ' +
  '`filter[phoneNumber]`. Each filter given names users; their wallets must be one (two: 400 `MultipleWalletsFound`). No filter: 400 `InvalidIdentifier`.';

export async function widgetRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;
  const key = ctx.config.widgetSigningKey!;

  /** The WalletWidgetData of one wallet, or undefined when the merchant has none such. */
  const walletWidgetData = async (
    version: 'v1' | 'v2',
    client: { id: string; settings: ClientSettings },
    walletId: string,
    q: { purchaseAmount?: number; includeDto?: boolean },
  ) => {
    const out = await issueWidgetPayload(ctx.db, {
      clientId: client.id,
      walletId,
      purchaseAmount: q.purchaseAmount,
      includeDto: q.includeDto,
      settings: client.settings,
      key,
      now: ctx.clock.now(),
    });
    if (!out) return undefined;
    return {
      id: out.id,
      type: 'WalletWidgetData' as const,
      attributes: {
        payload: out.payload,
        expiresAt: out.expiresAt.toISOString(),
        ...(out.dto ? { dto: out.dto } : {}),
      },
      relationships: { wallet: { data: { type: 'Wallet' as const, id: out.walletId } } },
      links: { self: `${base}/api/${version}/widgets/wallet/${out.walletId}` },
    };
  };
  // A wallet the merchant does not have (unknown, or another merchant's) gets Accrue's answer for
  // none found: 400 NoWalletFound in version 1, 200 `data: null` in version 2, alike for both.
  const noWallet = () => apiError('NoWalletFound', 'No wallet found for the given identifiers.');

  app.get(
    '/api/v1/widgets/wallet/:walletId',
    {
      schema: {
        tags: TAGS,
        operationId: 'getWalletWidgetData',
        summary: 'Get the payload for embeddable wallet widgets',
        description: `${PAYLOAD_DESCRIPTION} An unknown wallet (or another merchant's) is 400 \`NoWalletFound\`, as Accrue answers it.`,
        params: idParams('walletId'),
        querystring: ByIdQuery,
        response: responses({ 200: document(ref(WalletWidgetData)) }, COMMON_ERRORS),
      },
    },
    async (req) => {
      const data = await walletWidgetData('v1', req.client, req.params.walletId, req.query);
      if (!data) throw noWallet();
      return { data };
    },
  );

  app.get(
    '/api/v1/widgets/wallet',
    {
      schema: {
        tags: TAGS,
        operationId: 'findWalletWidgetData',
        summary: "Find a user's wallet and get its widget payload",
        description: `${FIND_DESCRIPTION} None found: 400 \`NoWalletFound\`. ${PAYLOAD_DESCRIPTION}`,
        querystring: FindQuery,
        response: responses({ 200: document(ref(WalletWidgetData)) }, COMMON_ERRORS),
      },
    },
    async (req) => {
      const walletId = await findWidgetWallet(ctx.db, { clientId: req.client.id, filters: filtersOf(req.query) });
      const data = walletId && (await walletWidgetData('v1', req.client, walletId, req.query));
      if (!data) throw noWallet();
      return { data };
    },
  );

  app.get(
    '/api/v2/widgets/wallet/:walletId',
    {
      schema: {
        tags: TAGS,
        operationId: 'getWalletWidgetDataV2',
        summary: 'Get the payload for embeddable wallet widgets (version 2; data: null when there is no such wallet)',
        description: `As GET /api/v1/widgets/wallet/{walletId}, with version 2 links; an unknown wallet (or another merchant's) is 200 with \`data: null\`, as Accrue answers it. ${PAYLOAD_DESCRIPTION}`,
        params: idParams('walletId'),
        querystring: ByIdQuery,
        response: responses({ 200: document(Nullable(ref(WalletWidgetData))) }, COMMON_ERRORS),
      },
    },
    async (req) => {
      return { data: (await walletWidgetData('v2', req.client, req.params.walletId, req.query)) ?? null };
    },
  );

  app.get(
    '/api/v2/widgets/wallet',
    {
      schema: {
        tags: TAGS,
        operationId: 'findWalletWidgetDataV2',
        summary: "Find a user's wallet and get its widget payload (data: null when none is found)",
        description: `${FIND_DESCRIPTION} None found: 200 with \`data: null\`. ${PAYLOAD_DESCRIPTION}`,
        querystring: FindQuery,
        response: responses({ 200: document(Nullable(ref(WalletWidgetData))) }, COMMON_ERRORS),
      },
    },
    async (req) => {
      const walletId = await findWidgetWallet(ctx.db, { clientId: req.client.id, filters: filtersOf(req.query) });
      return { data: (walletId && (await walletWidgetData('v2', req.client, walletId, req.query))) || null };
    },
  );

  app.get(
    '/api/v1/widgets/payment-intent/:paymentIntentId/linked-account',
    {
      schema: {
        tags: TAGS,
        operationId: 'getLinkedAccountWidgetData',
        summary: 'Get the linked-account widget data of a payment intent',
        description:
          "The linked account that pays what the wallet does not cover of the intent: the one its payment drew on, else the user's first connected account (the one an authorization draws on). " +
          '`dto` has its institution and last four digits, for merchants that draw their own widget; `payload` is for the widget host (15 minutes, ended early by a verified phone change). ' +
          "An unknown payment intent (or another merchant's) is 404 `PaymentIntentNotFound`; a gift's intent, or a user with no connected account, 400 `NoLinkedAccountFound`.",
        params: idParams('paymentIntentId'),
        querystring: query({}),
        response: responses({ 200: document(ref(LinkedAccountWidgetData)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const out = await issueLinkedAccountWidgetData(ctx.db, {
        clientId: req.client.id,
        paymentIntentId: req.params.paymentIntentId,
        key,
        now: ctx.clock.now(),
      });
      return {
        data: {
          id: out.id,
          type: 'LinkedAccountWidgetData' as const,
          attributes: {
            payload: out.payload,
            dto: { institutionName: out.account.institutionName, accountMask: out.account.accountMask },
            expiresAt: out.expiresAt.toISOString(),
            updatedAt: out.account.updatedAt.toISOString(),
            createdAt: out.account.createdAt.toISOString(),
          },
          relationships: {
            paymentIntent: { data: { type: 'PaymentIntent' as const, id: out.intent.id } },
            linkedAccount: { data: { type: 'LinkedAccount' as const, id: out.account.id } },
          },
          links: { self: `${base}/api/v1/widgets/payment-intent/${out.intent.id}/linked-account` },
        },
      };
    },
  );

  app.post(
    '/api/v1/widgets/session',
    {
      schema: {
        tags: TAGS,
        operationId: 'createWidgetSession',
        summary: 'Create a widget session',
        description:
          'A session token for a widget that needs no user: `PaymentMethods` shows how your checkout takes payment (wallet, gift, rails). It names only your client and the widget type, ' +
          "so it grants nothing about any user or wallet; it lives 15 minutes. 200, as Accrue's contract has it.",
        querystring: query({}),
        body: requestBody(
          'CreateWidgetSession',
          Type.Object({ widgetType: Type.Enum([...WIDGET_TYPES]) }, { additionalProperties: false }),
        ),
        response: responses({ 200: document(ref(WidgetSession)) }, COMMON_ERRORS),
      },
    },
    async (req) => {
      const now = ctx.clock.now();
      const { widgetType } = req.body.data.attributes;
      const s = await createWidgetSession({ clientId: req.client.id, widgetType, key, now });
      return {
        data: {
          id: s.id,
          type: 'WidgetSession' as const,
          attributes: {
            sessionToken: s.sessionToken,
            widgetType,
            expiresAt: s.expiresAt.toISOString(),
            createdAt: now.toISOString(),
          },
        },
      };
    },
  );
}
