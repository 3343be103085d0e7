import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { dateOf, pageLinks, pageOf, parseInclude } from '../../http/paging.ts';
import { COMMON_ERRORS, defaultBody, document, idParams, listDocument, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { userResource } from '../users/render.ts';
import { User } from '../users/schemas.ts';
import { findUser } from '../users/sql.ts';
import {
  createBarcode,
  createWallet,
  getBarcode,
  getUserWalletBalance,
  getWallet,
  getWalletBalance,
  listBarcodes,
  listWallets,
  lookupWalletByBarcode,
} from './domain.ts';
import { barcodeResource, walletBalanceResource, walletResource } from './render.ts';
import {
  BalanceQuery,
  CreateWalletBody,
  ListBarcodesQuery,
  ListWalletsQuery,
  LookUpParams,
  SimulateBarcodeBody,
  Wallet,
  WalletBarcode,
  WalletQuery,
  WalletWithBalance,
} from './schemas.ts';
import type { WalletRow } from './sql.ts';

const TAGS = ['Wallets'];
const INCLUDES = ['user'] as const;

export async function walletRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;

  /** `included` for include=user: the wallet's user, or nothing. */
  const includedUsers = async (clientId: string, wallet: WalletRow, include: string | undefined) => {
    if (!parseInclude(include, INCLUDES).has('user')) return [];
    const user = await findUser(ctx.db, clientId, wallet.userId);
    return user ? [userResource(user, base)] : [];
  };
  /** `included` where it is optional: present only when asked for. */
  const included = async (clientId: string, wallet: WalletRow, include: string | undefined) =>
    parseInclude(include, INCLUDES).has('user') ? { included: await includedUsers(clientId, wallet, include) } : {};
  // GET wallet and GET wallet by barcode always carry `included` (Accrue's contract requires it).
  const walletDocument = Type.Object({ data: ref(Wallet), included: Type.Array(ref(User)) });

  app.post(
    '/api/v1/wallets',
    {
      schema: {
        tags: TAGS,
        operationId: 'createWallet',
        summary: 'Create a wallet',
        description:
          'One wallet per user per merchant (400 `WalletAlreadyExists`, as Accrue answers it, with the existing wallet in `meta.existingId` and `links.about`); an unknown `userId` is 400 `UserNotFound`. No KYC is needed to open one.',
        body: CreateWalletBody,
        response: responses({ 201: document(ref(Wallet)) }, COMMON_ERRORS),
      },
    },
    async (req, reply) => {
      const wallet = await createWallet(ctx.db, {
        clientId: req.client.id,
        userId: req.body.data.attributes.userId,
        baseUrl: ctx.config.listeners.api.publicUrl,
        now: ctx.clock.now(),
      });
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
        description:
          "`filter[phoneNumber]`, `filter[email]`, `filter[referenceId]` (either reference id) and `filter[userId]` match the wallet's user; " +
          '`filter[status]` the wallet; `filter[createdAfter]` (inclusive) and `filter[createdBefore]` (exclusive) its creation time. Newest first.',
        querystring: ListWalletsQuery,
        response: responses({ 200: listDocument(ref(Wallet)) }, COMMON_ERRORS),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const { rows, total } = await listWallets(ctx.db, {
        clientId: req.client.id,
        filters: {
          phoneNumber: req.query['filter[phoneNumber]'],
          email: req.query['filter[email]'],
          referenceId: req.query['filter[referenceId]'],
          userId: req.query['filter[userId]'],
          status: req.query['filter[status]'],
          createdAfter: dateOf(req.query['filter[createdAfter]']),
          createdBefore: dateOf(req.query['filter[createdBefore]']),
        },
        page,
      });
      return {
        data: rows.map((w) => walletResource(w, base)),
        meta: { total, ...page },
        links: pageLinks(base, req.url, page, total),
      };
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
        response: responses({ 200: walletDocument }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const wallet = await getWallet(ctx.db, { clientId: req.client.id, walletId: req.params.walletId });
      return {
        data: walletResource(wallet, base),
        included: await includedUsers(req.client.id, wallet, req.query.include),
      };
    },
  );

  app.get(
    '/api/v1/wallets/barcode/:lookUpId',
    {
      schema: {
        tags: TAGS,
        operationId: 'getWalletByBarcode',
        summary: 'Look a wallet up by its scanned barcode',
        description:
          "Scoped to the merchant. An expired or used-up barcode is 400 `WalletIdentifierExpired`; a gift's id is never a wallet (404).",
        params: LookUpParams,
        querystring: WalletQuery,
        response: responses({ 200: walletDocument }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const wallet = await lookupWalletByBarcode(ctx.db, {
        clientId: req.client.id,
        lookUpId: req.params.lookUpId,
        now: ctx.clock.now(),
      });
      return {
        data: walletResource(wallet, base),
        included: await includedUsers(req.client.id, wallet, req.query.include),
      };
    },
  );

  const balanceDescription =
    '`available` is spendable now, `pending` not yet cleared, `reserved` authorized but not captured, `total` = available + pending + reserved per bucket. ' +
    "With `purchaseAmount`, `available.reward` counts only rewards usable on that purchase (none below the merchant's `rewardMinimumPurchase`, never more than the purchase); `total` stays what the wallet holds. " +
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
      return {
        data: walletBalanceResource(wallet, balance, base),
        ...(await included(req.client.id, wallet, req.query.include)),
      };
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
      return {
        data: walletBalanceResource(wallet, balance, base),
        ...(await included(req.client.id, wallet, req.query.include)),
      };
    },
  );
}

/** Sandbox only: the barcodes the wallet app would show. */
export async function walletSimulationRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;
  const SIM = ['Sandbox simulations'];

  app.post(
    '/api/v1/simulation/wallets/:walletId/barcodes',
    {
      schema: {
        tags: SIM,
        operationId: 'generateWalletBarcode',
        summary: 'Create a scan-and-pay barcode (sandbox)',
        description:
          'A 16-digit `lookUpId`, valid 10 minutes unless `expiresAt` (or `ttlSeconds`) says otherwise, at most 24 hours. ' +
          "Type `GenerateWalletBarcode` (Accrue's name): without `usageLimit` the barcode has no use limit. " +
          'Types `WalletBarcode` and `SimulateWalletBarcode`, and no body at all: usable once unless `usageLimit` says otherwise. ' +
          '`reuseActive: true` answers with the newest barcode of the wallet still usable, when there is one. The body is optional.',
        params: idParams('walletId'),
        querystring: Type.Object({}, { additionalProperties: false }),
        body: SimulateBarcodeBody,
        response: responses({ 201: document(ref(WalletBarcode)) }, [...COMMON_ERRORS, 404]),
      },
      preValidation: defaultBody({ data: { type: 'WalletBarcode', attributes: {} } }),
    },
    async (req, reply) => {
      const { type, attributes: a } = req.body.data;
      const b = await createBarcode(ctx.db, {
        clientId: req.client.id,
        walletId: req.params.walletId,
        expiresAt: a.expiresAt,
        ttlSeconds: a.ttlSeconds,
        usageLimit: a.usageLimit ?? (type === 'GenerateWalletBarcode' ? null : 1),
        reuseActive: a.reuseActive,
        now: ctx.clock.now(),
      });
      return reply.code(201).send({ data: barcodeResource(b) });
    },
  );

  app.get(
    '/api/v1/simulation/wallets/:walletId/barcodes',
    {
      schema: {
        tags: SIM,
        operationId: 'listWalletBarcodes',
        summary: "List a wallet's barcodes (sandbox)",
        description:
          'Newest first, paged. Barcodes past their `expiresAt` are left out unless `includeExpired=true`; used-up ones are listed (`usageCount` = `usageLimit`).',
        params: idParams('walletId'),
        querystring: ListBarcodesQuery,
        response: responses({ 200: listDocument(ref(WalletBarcode)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const { rows, total } = await listBarcodes(ctx.db, {
        clientId: req.client.id,
        walletId: req.params.walletId,
        includeExpired: req.query.includeExpired ?? false,
        now: ctx.clock.now(),
        page,
      });
      return {
        data: rows.map((b) => barcodeResource(b)),
        meta: { total, ...page },
        links: pageLinks(base, req.url, page, total),
      };
    },
  );

  app.get(
    '/api/v1/simulation/barcodes/:lookUpId',
    {
      schema: {
        tags: SIM,
        operationId: 'getWalletBarcode',
        summary: 'Get a barcode by its lookUpId (sandbox)',
        description:
          "Scoped to the merchant: another merchant's barcode is 404 `BarcodeNotFound`, like an unknown one. An expired or used-up barcode is 400 `InvalidTransaction`. " +
          "As in Accrue's contract, the response's `id` is the wallet's id (`attributes.walletId` too).",
        params: LookUpParams,
        querystring: Type.Object({}, { additionalProperties: false }),
        response: responses({ 200: document(ref(WalletBarcode)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const b = await getBarcode(ctx.db, {
        clientId: req.client.id,
        lookUpId: req.params.lookUpId,
        now: ctx.clock.now(),
      });
      return { data: barcodeResource(b, { idOf: 'wallet' }) };
    },
  );
}
