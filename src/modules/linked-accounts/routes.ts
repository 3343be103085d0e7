import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { pageLinks, pageOf } from '../../http/paging.ts';
import { COMMON_ERRORS, defaultBody, document, idParams, listDocument, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { linkAccount, linkDemoCard, listLinkedAccounts, removeLinkedAccount } from './domain.ts';
import { demoBackupPaymentMethodResource, linkedAccountResource } from './render.ts';
import {
  DemoBackupPaymentMethod,
  DemoBackupPaymentMethodBody,
  LinkAccountBody,
  LinkedAccount,
  ListLinkedAccountsQuery,
  SimulateLinkedAccountBody,
} from './schemas.ts';

const TAGS = ['Linked accounts'];
const NoQuery = Type.Object({}, { additionalProperties: false });

export async function linkedAccountRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;

  app.get(
    '/api/v1/users/:userId/linked-accounts',
    {
      schema: {
        tags: TAGS,
        operationId: 'getLinkedAccounts',
        summary: "List a user's linked accounts",
        description: 'Connected and disconnected accounts, newest first.',
        params: idParams('userId'),
        querystring: ListLinkedAccountsQuery,
        response: responses({ 200: listDocument(ref(LinkedAccount)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const { rows, total } = await listLinkedAccounts(ctx.db, {
        clientId: req.client.id,
        userId: req.params.userId,
        page,
      });
      return {
        data: rows.map((a) => linkedAccountResource(a, base)),
        meta: { total, ...page },
        links: pageLinks(base, req.url, page, total),
      };
    },
  );

  app.delete(
    '/api/v1/users/:userId/linked-accounts/:linkedAccountId',
    {
      schema: {
        tags: TAGS,
        operationId: 'deleteLinkedAccount',
        summary: 'Remove a linked account',
        description:
          'Disconnects the account and deactivates it with the bank-linking provider. Irreversible (the user must link it again) and idempotent: ' +
          'removing a removed account also returns 204. A disconnected account cannot fund anything.',
        params: idParams('userId', 'linkedAccountId'),
        querystring: NoQuery,
        response: responses({ 204: null }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req, reply) => {
      await removeLinkedAccount(ctx.db, {
        clientId: req.client.id,
        userId: req.params.userId,
        linkedAccountId: req.params.linkedAccountId,
        provider: ctx.providers.bankLinking,
        now: ctx.clock.now(),
      });
      return reply.code(204).send();
    },
  );
}

/** Sandbox only: stands in for the user linking an account or a card in the wallet app. */
export async function linkedAccountSimulationRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;
  app.post(
    '/api/v1/simulation/users/:userId/linked-accounts',
    {
      schema: {
        tags: ['Sandbox simulations'],
        operationId: 'simulateLinkedAccount',
        summary: 'Link a bank account (sandbox)',
        description:
          'Creates a `Connected` account from provider `Plaid`. The body is optional. Not available in live (404).',
        params: idParams('userId'),
        querystring: NoQuery,
        body: SimulateLinkedAccountBody,
        response: responses({ 201: document(ref(LinkedAccount)) }, [...COMMON_ERRORS, 404]),
      },
      preValidation: defaultBody({ data: { type: 'LinkedAccount', attributes: {} } }),
    },
    async (req, reply) => {
      const attrs = req.body.data.attributes;
      const account = await linkAccount(ctx.db, {
        clientId: req.client.id,
        userId: req.params.userId,
        provider: ctx.providers.bankLinking,
        ...attrs,
        now: ctx.clock.now(),
      });
      return reply.code(201).send({ data: linkedAccountResource(account, base) });
    },
  );

  app.post(
    '/api/v1/simulation/wallets/:walletId/backup-linked-account',
    {
      schema: {
        tags: ['Sandbox simulations'],
        operationId: 'createDemoBackupPaymentMethod',
        summary: 'Link a demo card as a backup payment method (sandbox)',
        description:
          "Links a test card to the wallet's user: a `Connected` linked account from provider `Checkout` (type `creditCard` or `debit`), which pays what the wallet does not cover " +
          'when an intent is authorized, and can fund deposits (cleared with `clear-pending/card`). The body is optional plain JSON: `{"testCardType": "visa-us-credit"}` (the default). ' +
          'Linking the same test card again answers 200 with the account already linked; a new one is 201. Not available in live (404).',
        params: idParams('walletId'),
        querystring: NoQuery,
        body: DemoBackupPaymentMethodBody,
        response: responses(
          { 200: document(ref(DemoBackupPaymentMethod)), 201: document(ref(DemoBackupPaymentMethod)) },
          [...COMMON_ERRORS, 404],
        ),
      },
      preValidation: defaultBody({}),
    },
    async (req, reply) => {
      const { account, created } = await linkDemoCard(ctx.db, {
        clientId: req.client.id,
        walletId: req.params.walletId,
        testCardType: req.body.testCardType,
        now: ctx.clock.now(),
      });
      return reply.code(created ? 201 : 200).send({ data: demoBackupPaymentMethodResource(account) });
    },
  );
}

/**
 * Admin listener: the operator's wallet app links an account once the user has finished the
 * bank-linking provider's flow, handing over what the flow produced; the adapter turns it into
 * the account (docs/providers.md). The merchant's API has no linking of its own (docs/identity.md#linked-accounts-in-detail).
 */
export async function linkedAccountAdminRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;
  app.post(
    '/admin/v1/clients/:clientId/users/:userId/linked-accounts',
    {
      schema: {
        tags: ['Admin'],
        operationId: 'adminLinkAccount',
        summary: "Link a user's bank account",
        description:
          "Calls the bank-linking adapter with the token of the user's linking flow and adds the account it answers, `Connected`. " +
          'Not idempotent: each call links an account. 503 `ServiceUnavailable` when the adapter did not answer (nothing was linked).',
        params: idParams('clientId', 'userId'),
        querystring: NoQuery,
        body: LinkAccountBody,
        response: responses({ 201: document(ref(LinkedAccount)) }, [400, 401, 404, 415, 503]),
      },
    },
    async (req, reply) => {
      const account = await linkAccount(ctx.db, {
        clientId: req.params.clientId,
        userId: req.params.userId,
        provider: ctx.providers.bankLinking,
        token: req.body.data.attributes.token,
        now: ctx.clock.now(),
      });
      return reply.code(201).send({ data: linkedAccountResource(account, base) });
    },
  );
}
