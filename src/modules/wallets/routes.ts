import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { pageLinks, pageOf, parseInclude } from '../../http/paging.ts';
import { COMMON_ERRORS, defaultBody, document, idParams, listDocument, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { userResource } from '../users/render.ts';
import { User } from '../users/schemas.ts';
import { findUser } from '../users/sql.ts';
import { createBarcode, createWallet, getUserWalletBalance, getWallet, getWalletBalance, listWallets, lookupWalletByBarcode } from './domain.ts';
import { barcodeResource, walletBalanceResource, walletResource } from './render.ts';
import { BalanceQuery, CreateWalletBody, ListWalletsQuery, LookUpParams, SimulateBarcodeBody, Wallet, WalletBarcode, WalletQuery, WalletWithBalance } from './schemas.ts';
import type { WalletRow } from './sql.ts';

const TAGS = ['Wallets'];
const INCLUDES = ['user'] as const;

export async function walletRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;

  /** `included` for include=user. */
  const included = async (clientId: string, wallet: WalletRow, include: string | undefined) => {
    if (!parseInclude(include, INCLUDES).has('user')) return {};
    const user = await findUser(ctx.db, clientId, wallet.userId);
    return { included: user ? [userResource(user, base)] : [] };
  };

  app.post(
    '/api/v1/wallets',
    {
      schema: {
        tags: TAGS,
        operationId: 'createWallet',
        summary: 'Create a wallet',
        description: 'One wallet per user per merchant (409 `WalletAlreadyExists`); an unknown `userId` is 400 `UserNotFound`. No KYC is needed to open one.',
        body: CreateWalletBody,
        response: responses({ 201: document(ref(Wallet)) }, [...COMMON_ERRORS, 409]),
      },
    },
    async (req, reply) => {
      const wallet = await createWallet(ctx.db, { clientId: req.client.id, userId: req.body.data.attributes.userId, baseUrl: ctx.config.listeners.api.publicUrl, now: ctx.clock.now() });
      reply.code(201).header('location', walletResource(wallet, base).links.self);
      return { data: walletResource(wallet, base) };
    },
  );

  app.get(
    '/api/v1/wallets',
    {
      schema: {
        tags: TAGS,
        operationId: 'listWallets',
        summary: 'List wallets',
        description: "Filters match the wallet's user (`filter[referenceId]`: either reference id). Newest first.",
        querystring: ListWalletsQuery,
        response: responses({ 200: listDocument(ref(Wallet)) }, COMMON_ERRORS),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const { rows, total } = await listWallets(ctx.db, {
        clientId: req.client.id,
        filters: { phoneNumber: req.query['filter[phoneNumber]'], email: req.query['filter[email]'], referenceId: req.query['filter[referenceId]'] },
        page,
      });
      return { data: rows.map((w) => walletResource(w, base)), meta: { total, ...page }, links: pageLinks(base, req.url, page, total) };
    },
  );

  app.get(
    '/api/v1/wallets/:walletId',
    {
      schema: {
        tags: TAGS,
        operationId: 'getWallet',
        summary: 'Get a wallet',
        params: idParams('walletId'),
        querystring: WalletQuery,
        response: responses({ 200: document(ref(Wallet), [ref(User)]) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const wallet = await getWallet(ctx.db, { clientId: req.client.id, walletId: req.params.walletId });
      return { data: walletResource(wallet, base), ...(await included(req.client.id, wallet, req.query.include)) };
    },
  );

  app.get(
    '/api/v1/wallets/barcode/:lookUpId',
    {
      schema: {
        tags: TAGS,
        operationId: 'getWalletByBarcode',
        summary: 'Look a wallet up by its scanned barcode',
        description: "Scoped to the merchant. An expired or used-up barcode is 400 `WalletIdentifierExpired`; a gift's id is never a wallet (404).",
        params: LookUpParams,
        querystring: WalletQuery,
        response: responses({ 200: document(ref(Wallet), [ref(User)]) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const wallet = await lookupWalletByBarcode(ctx.db, { clientId: req.client.id, lookUpId: req.params.lookUpId, now: ctx.clock.now() });
      return { data: walletResource(wallet, base), ...(await included(req.client.id, wallet, req.query.include)) };
    },
  );

  const balanceDescription =
    '`available` is spendable now, `pending` not yet cleared, `reserved` authorized but not captured, `total` = available + pending + reserved per bucket. ' +
    'With `purchaseAmount`, `available.reward` counts only rewards usable on that purchase (none below the merchant\'s `rewardMinimumPurchase`, never more than the purchase); `total` stays what the wallet holds. ' +
    '`includeWithdrawableAmount=true` adds `balance.withdrawable.total` (available deposit money).';

  app.get(
    '/api/v1/wallets/:walletId/balance',
    {
      schema: {
        tags: TAGS,
        operationId: 'getWalletBalance',
        summary: 'Get a wallet balance',
        description: `${balanceDescription} \`userReference\`, when given, must be the wallet's user (else 400 \`InvalidIdentifier\`).`,
        params: idParams('walletId'),
        querystring: BalanceQuery,
        response: responses({ 200: document(ref(WalletWithBalance), [ref(User)]) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const { wallet, balance } = await getWalletBalance(ctx.db, {
        clientId: req.client.id,
        walletId: req.params.walletId,
        userReference: req.query.userReference,
        purchaseAmount: req.query.purchaseAmount,
        includeWithdrawable: req.query.includeWithdrawableAmount,
        rewardMinimumPurchase: req.client.settings.rewardMinimumPurchase,
      });
      return { data: walletBalanceResource(wallet, balance, base), ...(await included(req.client.id, wallet, req.query.include)) };
    },
  );

  app.get(
    '/api/v1/users/:userId/wallet-balance',
    {
      schema: {
        tags: TAGS,
        operationId: 'getUserWalletBalance',
        summary: "Get a user's wallet balance",
        description: `The user's wallet with this merchant, as the wallet balance endpoint returns it (400 \`InvalidUser\` when the user has none). ${balanceDescription}`,
        params: idParams('userId'),
        querystring: Type.Omit(BalanceQuery, ['userReference'], { additionalProperties: false }),
        response: responses({ 200: document(ref(WalletWithBalance), [ref(User)]) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const { wallet, balance } = await getUserWalletBalance(ctx.db, {
        clientId: req.client.id,
        userId: req.params.userId,
        purchaseAmount: req.query.purchaseAmount,
        includeWithdrawable: req.query.includeWithdrawableAmount,
        rewardMinimumPurchase: req.client.settings.rewardMinimumPurchase,
      });
      return { data: walletBalanceResource(wallet, balance, base), ...(await included(req.client.id, wallet, req.query.include)) };
    },
  );
}

/** Sandbox only: the barcode the wallet app would show. */
export async function walletSimulationRoutes(app: App, ctx: AppContext): Promise<void> {
  app.post(
    '/api/v1/simulation/wallets/:walletId/barcodes',
    {
      schema: {
        tags: ['Sandbox simulations'],
        operationId: 'simulateWalletBarcode',
        summary: 'Create a scan-and-pay barcode (sandbox)',
        description: 'A 16-digit `lookUpId`, valid 10 minutes and usable once unless `ttlSeconds` / `usageLimit` say otherwise. The body is optional.',
        params: idParams('walletId'),
        querystring: Type.Object({}, { additionalProperties: false }),
        body: SimulateBarcodeBody,
        response: responses({ 201: document(ref(WalletBarcode)) }, [...COMMON_ERRORS, 404]),
      },
      preValidation: defaultBody({ data: { type: 'WalletBarcode', attributes: {} } }),
    },
    async (req, reply) => {
      const b = await createBarcode(ctx.db, { clientId: req.client.id, walletId: req.params.walletId, ...req.body.data.attributes, now: ctx.clock.now() });
      return reply.code(201).send({ data: barcodeResource(b) });
    },
  );
}
