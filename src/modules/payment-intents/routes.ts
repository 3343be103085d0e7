import { refuseOverMaxAmount } from '../clients/settings.ts';
import type { AppContext } from '../../context.ts';
import { ApiError, apiError } from '../../http/errors.ts';
import { sendOutcome } from '../../http/idempotency.ts';
import { pageLinks, pageOf, parseInclude, parseSort } from '../../http/paging.ts';
import { COMMON_ERRORS, document, idParams, listDocument, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import type { AuthenticatedClient } from '../clients/authenticate.ts';
import { paymentResource, renderContext } from '../payments/render.ts';
import { Payment } from '../payments/schemas.ts';
import { paymentIdsOfListedIntents, paymentsOfIntents } from '../payments/sql.ts';
import { authorizeDeps, serializerOf } from './authorize.ts';
import { submitAuthorize } from './authorize-groups.ts';
import { submitIntentCancel } from './cancel-groups.ts';
import { createIntent, getIntent, listIntents, refreshBalance } from './domain.ts';
import { intentResource } from './render.ts';
import {
  AuthorizeBody,
  ClientSummary,
  CreateIntentBody,
  IntentQuery,
  ListIntentsQuery,
  PaymentIntent,
  PROCESSOR_META_MAX_BYTES,
} from './schemas.ts';
import { INTENT_SORT_FIELDS, type IntentRow } from './sql.ts';
import { authorizations } from '../../observability/metrics.ts';

const TAGS = ['Payment intents'];

const clientResource = (c: AuthenticatedClient) => ({
  id: c.id,
  type: 'Client' as const,
  attributes: { name: c.name },
});

export async function paymentIntentRoutes(app: App, ctx: AppContext): Promise<void> {
  const rc = renderContext(ctx);
  const base = rc.baseUrl;

  /** Renders intents with their payments (whole only when `include` asks for them) and what `include` asks for. */
  const render = async (client: AuthenticatedClient, intents: IntentRow[], include: Set<string>) => {
    const ids = intents.map((i) => i.id);
    const payments = include.has('payments') ? await paymentsOfIntents(ctx.db, ids) : undefined;
    let byIntent: Map<string, string[]>;
    if (payments) {
      byIntent = new Map(ids.map((id) => [id, []]));
      for (const p of payments) byIntent.get(p.intentId!)!.push(p.id);
    } else byIntent = await paymentIdsOfListedIntents(ctx.db, ids);
    const now = ctx.clock.now();
    const data = await Promise.all(
      intents.map(async (i) => {
        const row = include.has('balance') ? { ...i, balance: await refreshBalance(ctx.db, i, client) } : i;
        return intentResource(row, byIntent.get(i.id)!, base, now);
      }),
    );
    const included: unknown[] = [];
    if (include.has('client')) included.push(clientResource(client));
    if (payments) included.push(...payments.map((p) => paymentResource(p, rc)));
    return { data, included };
  };

  app.post(
    '/api/v1/payment-intents',
    {
      schema: {
        tags: TAGS,
        operationId: 'createPaymentIntent',
        summary: 'Create a payment intent',
        description:
          'Exactly one of `walletId` or `lookUpId`. A `lookUpId` is resolved as a wallet barcode (scan-and-pay) first, then as a gift. ' +
          'Wallet intents need KYC `Approved` and an `Active` wallet; otherwise the intent is created `Invalid` with `error`. Gift intents skip KYC. ' +
          "`balance` shows what can be put toward `amount`. The intent expires after the merchant's `paymentIntentTtlSeconds`. " +
          "A `walletId` the merchant has no wallet for (unknown, or another merchant's) is 404 `WalletIdentifierNotFound`, Accrue's code.",
        body: CreateIntentBody,
        response: responses({ 201: document(ref(PaymentIntent)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req, reply) => {
      refuseOverMaxAmount(req.body.data.attributes.amount, req.client.settings, '/data/attributes/amount');
      const intent = await createIntent(ctx.db, {
        client: req.client,
        ...req.body.data.attributes,
        rc,
        now: ctx.clock.now(),
      });
      reply.code(201).header('location', `${base}/api/v1/payment-intents/${intent.id}`);
      return { data: intentResource(intent, [], base, ctx.clock.now()) };
    },
  );

  app.get(
    '/api/v1/payment-intents',
    {
      schema: {
        tags: TAGS,
        operationId: 'listPaymentIntents',
        summary: 'List payment intents',
        description:
          'Default sort `-createdAt`. `filter[status]` matches the status as read (an intent past expiresAt is Expired). `include=balance` recomputes each balance block now.',
        querystring: ListIntentsQuery,
        response: responses(
          { 200: listDocument(ref(PaymentIntent), [ref(ClientSummary), ref(Payment)]) },
          COMMON_ERRORS,
        ),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const include = parseInclude(req.query.include, ['client', 'payments', 'balance'] as const);
      const sort = parseSort(req.query.sort, INTENT_SORT_FIELDS, '-createdAt');
      const { rows, total } = await listIntents(ctx.db, {
        clientId: req.client.id,
        filters: {
          initiator: req.query['filter[initiator]'],
          status: req.query['filter[status]'],
          paymentMethod: req.query['filter[paymentMethod]'],
        },
        sort,
        page,
        now: ctx.clock.now(),
      });
      const { data, included } = await render(req.client, rows, include);
      return {
        data,
        ...(included.length > 0 || include.size > 0 ? { included } : {}),
        meta: { total, ...page },
        links: pageLinks(base, req.url, page, total),
      };
    },
  );

  app.get(
    '/api/v1/payment-intents/:paymentIntentId',
    {
      schema: {
        tags: TAGS,
        operationId: 'getPaymentIntent',
        summary: 'Get a payment intent',
        params: idParams('paymentIntentId'),
        querystring: IntentQuery,
        response: responses({ 200: document(ref(PaymentIntent), [ref(ClientSummary), ref(Payment)]) }, [
          ...COMMON_ERRORS,
          404,
        ]),
      },
    },
    async (req) => {
      const include = parseInclude(req.query.include, ['client', 'payments'] as const);
      const intent = await getIntent(ctx.db, { clientId: req.client.id, intentId: req.params.paymentIntentId });
      // Accrue's GetPaymentIntentResponse always carries `included` with the intent's payments.
      const { data, included } = await render(req.client, [intent], new Set([...include, 'payments' as const]));
      return { data: data[0]!, included };
    },
  );

  app.post(
    '/api/v1/payment-intents/:paymentIntentId/cancel',
    {
      schema: {
        tags: TAGS,
        operationId: 'cancelPaymentIntent',
        summary: 'Cancel a payment intent',
        description:
          'From `Promotable`, `Invalid` or `RequiresAction`; from `PromotedToPayment` only while its payment is `Created` (the payment is canceled too and its funds released). Otherwise 400 `IllegalOperation`.',
        params: idParams('paymentIntentId'),
        response: responses({ 200: document(ref(PaymentIntent)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const { intent, paymentIds } = await submitIntentCancel(ctx.db, {
        clientId: req.client.id,
        intentId: req.params.paymentIntentId,
        rc,
        now: ctx.clock.now(),
      });
      return { data: intentResource(intent, paymentIds, base, ctx.clock.now()) };
    },
  );

  app.post(
    '/api/v1/payment-intents/:paymentIntentId/authorize',
    {
      schema: {
        tags: TAGS,
        operationId: 'authorizePayment',
        summary: 'Authorize a payment intent',
        description:
          "Creates the payment (`Created`; captured at once when the merchant captures automatically): with `applyWalletBalance` (default true) the wallet's money is reserved " +
          "(merchant rewards, accrue rewards, deposit), the rest comes from the connected linked account. Over the intent's amount or upper limit: 402 `Failed`. " +
          'No connected account for the rest: 402, and the intent requires action (`error` LinkedAccountMissing). ' +
          'Send `idempotencyKey` on every authorize and reuse it for every retry: the same key and attributes replay the first response byte for byte; while the first runs, 409 ' +
          '`IdempotencyKeyInUse`; other attributes, 409 `IdempotencyKeyReused`. An intent already authorized returns its active payment (201, as the first answer) without authorizing again; ' +
          'one that cannot be authorized (expired, canceled, invalid) is 402 `PaymentIntentExpired` or `IllegalOperation`. ' +
          "With the merchant's card processor, authorization waits for it (seconds; use a 60 s+ client timeout); a decline is 402 with the payment `Failed`; concurrent retries get 409 " +
          '`AlreadyExists` (retry the same request) and are never charged twice.',
        params: idParams('paymentIntentId'),
        body: AuthorizeBody,
        response: responses({ 201: document(ref(PaymentIntent), [ref(Payment)]) }, [...COMMON_ERRORS, 402, 404, 409]),
      },
    },
    async (req, reply) => {
      const a = req.body.data.attributes;
      refuseOverMaxAmount(a.amount, req.client.settings, '/data/attributes/amount');
      if (a.meta?.processor && Buffer.byteLength(JSON.stringify(a.meta.processor)) > PROCESSOR_META_MAX_BYTES) {
        throw apiError(
          'ValidationError',
          `\`meta.processor\` must be at most ${PROCESSOR_META_MAX_BYTES} bytes as JSON.`,
          { pointer: '/data/attributes/meta/processor' },
        );
      }
      let outcome: Awaited<ReturnType<typeof submitAuthorize>>;
      try {
        outcome = await submitAuthorize({ ...authorizeDeps(ctx), requestId: req.id }, serializerOf(reply), {
          clientId: req.client.id,
          settings: req.client.settings,
          intentId: req.params.paymentIntentId,
          amount: a.amount,
          applyWalletBalance: a.applyWalletBalance ?? true,
          idempotencyKey: a.idempotencyKey,
          reference: a.reference,
          channel: typeof a.channel === 'object' ? `${a.channel.type}:${a.channel.id}` : a.channel,
          risk: a.risk,
          processorMeta: a.meta?.processor,
        });
      } catch (err) {
        // Refused before any decision (over the amount, the balance changed): a decline.
        if (err instanceof ApiError && err.status === 402) authorizations.labels('declined').inc();
        throw err;
      }
      // 200 (authorized before) and replays decide nothing.
      if (!outcome.replayed && (outcome.status === 201 || outcome.status === 402)) {
        authorizations
          .labels(outcome.status === 201 ? 'approved' : outcome.requiresAction ? 'requires_action' : 'declined')
          .inc();
      }
      return sendOutcome(reply, outcome);
    },
  );
}
