import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { fingerprintOf, idempotent, sendOutcome } from '../../http/idempotency.ts';
import { pageLinks, pageOf, parseInclude, parseSort } from '../../http/paging.ts';
import { COMMON_ERRORS, Timestamp, defaultBody, document, idParams, listDocument, ref, requestBody, resource, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { clientAccountIds } from '../../ledger/accounts.ts';
import { intentResource } from '../payment-intents/render.ts';
import { renderContext } from '../payment-intents/routes.ts';
import { PaymentIntent } from '../payment-intents/schemas.ts';
import { intentsByIds } from '../payment-intents/sql.ts';
import { submitCapture } from './capture-groups.ts';
import {
  cancelPayment,
  createDirectPayment,
  failBankPull,
  getPayment,
  networkAuthorize,
  networkCapture,
  refundPayment,
  refundsByPayment,
  settlePaymentNow,
} from './domain.ts';
import { paymentResource, refundResource } from './render.ts';
import { CaptureBody, CardNetworkBody, CreatePaymentBody, ListPaymentsQuery, Payment, PaymentQuery, Refund, RefundBody } from './schemas.ts';
import { PAYMENT_SORT_FIELDS, listPaymentRows, paymentsOfIntents, type PaymentRow } from './sql.ts';

const TAGS = ['Payments'];
const NoQuery = Type.Object({}, { additionalProperties: false });

export const Capture = resource('Capture', 'Capture', { paymentId: Type.String(), amount: Type.Integer(), capturedAt: Timestamp() });
export const schemas = [Capture];

const captureResource = (p: PaymentRow) => ({
  id: p.id,
  type: 'Capture' as const,
  attributes: { paymentId: p.id, amount: p.capturedAmount, capturedAt: p.capturedAt!.toISOString() },
});

export async function paymentRoutes(app: App, ctx: AppContext): Promise<void> {
  const rc = renderContext(ctx);

  /** Payments with what `include` asks for. */
  const render = async (clientId: string, rows: PaymentRow[], include: Set<string>) => {
    const refunds = include.has('refunds') ? await refundsByPayment(ctx.db, rows.map((p) => p.id)) : undefined;
    const data = rows.map((p) => paymentResource(p, rc, { refunds: refunds ? (refunds.get(p.id) ?? []) : undefined, withProcessor: true }));
    const included: unknown[] = [];
    if (include.has('paymentIntent')) {
      const intents = await intentsByIds(ctx.db, clientId, [...new Set(rows.flatMap((p) => (p.intentId ? [p.intentId] : [])))]);
      const theirPayments = await paymentsOfIntents(ctx.db, intents.map((i) => i.id));
      const now = ctx.clock.now();
      included.push(...intents.map((i) => intentResource(i, theirPayments.filter((p) => p.intentId === i.id).map((p) => p.id), rc.baseUrl, now)));
    }
    if (include.has('captures')) included.push(...rows.filter((p) => p.capturedAt).map(captureResource));
    if (refunds) included.push(...[...refunds.values()].flat().map(refundResource));
    return { data, included };
  };

  app.post(
    '/api/v1/payments',
    {
      schema: {
        tags: TAGS,
        operationId: 'createPayment',
        summary: 'Take a payment from a wallet (and linked account)',
        description:
          '`amount` is the whole purchase. `externalPayments` (cash and the like) are recorded, not moved; the rest is paid from the wallet (merchant rewards, accrue rewards, deposit), ' +
          'then the `linkedAccountId` (up to the merchant\'s bankFundingLimit). The payment starts `Processing` and settles to `Sent`, when `disbursement` reaches its counterparties. ' +
          'Needs KYC `Approved`. `idempotencyKey` optional (same rules as deposits).',
        body: CreatePaymentBody,
        response: responses({ 201: document(ref(Payment)) }, [...COMMON_ERRORS, 402, 409]),
      },
    },
    async (req, reply) => {
      const { idempotencyKey, ...attributes } = req.body.data.attributes;
      const ext = await clientAccountIds(ctx.db, req.client.id);
      const run = async (tx: Parameters<Parameters<typeof ctx.db.transaction>[0]>[0]) => {
        const p = await createDirectPayment(tx, { clientId: req.client.id, settings: req.client.settings, ...attributes, ext, rc, now: ctx.clock.now() });
        return { status: 201, body: { data: paymentResource(p, rc) } };
      };
      const outcome = idempotencyKey
        ? await idempotent(reply, { clientId: req.client.id, operation: 'payment', key: idempotencyKey, fingerprint: fingerprintOf(attributes) }, { db: ctx.db, clock: ctx.clock }, run)
        : await ctx.db.transaction(run).then((o) => ({ status: o.status, body: reply.getSerializationFunction('201', 'application/vnd.api+json')!(o.body), replayed: false }));
      return sendOutcome(reply, outcome);
    },
  );

  app.get(
    '/api/v1/payments',
    {
      schema: {
        tags: TAGS,
        operationId: 'listPayments',
        summary: 'List payments',
        description: 'Default sort `-createdAt`.',
        querystring: ListPaymentsQuery,
        response: responses({ 200: listDocument(ref(Payment), [ref(PaymentIntent), ref(Capture), ref(Refund)]) }, COMMON_ERRORS),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const include = parseInclude(req.query.include, ['paymentIntent', 'captures', 'refunds'] as const);
      const sort = parseSort(req.query.sort, PAYMENT_SORT_FIELDS, '-createdAt');
      const { rows, total } = await listPaymentRows(
        ctx.db,
        req.client.id,
        { status: req.query['filter[status]'], paymentIntentId: req.query['filter[paymentIntentId]'], reference: req.query['filter[reference]'], channel: req.query['filter[channel]'] },
        sort,
        page,
      );
      const { data, included } = await render(req.client.id, rows, include);
      return { data, ...(include.size > 0 ? { included } : {}), meta: { total, ...page }, links: pageLinks(rc.baseUrl, req.url, page, total) };
    },
  );

  app.get(
    '/api/v1/payments/:paymentId',
    {
      schema: {
        tags: TAGS,
        operationId: 'getPayment',
        summary: 'Get a payment',
        params: idParams('paymentId'),
        querystring: PaymentQuery,
        response: responses({ 200: document(ref(Payment), [ref(PaymentIntent), ref(Refund)]) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const include = parseInclude(req.query.include, ['paymentIntent', 'refunds'] as const);
      const p = await getPayment(ctx.db, { clientId: req.client.id, paymentId: req.params.paymentId });
      const { data, included } = await render(req.client.id, [p], include);
      return { data: data[0]!, ...(include.size > 0 ? { included } : {}) };
    },
  );

  app.post(
    '/api/v1/payments/:paymentId/capture',
    {
      schema: {
        tags: TAGS,
        operationId: 'capturePayment',
        summary: 'Capture an authorized payment (bank rails)',
        description: '`Created` → `Processing`. At most the authorized amount; the uncaptured rest is released to the wallet. Card-rail and gift payments are captured through the card network.',
        params: idParams('paymentId'),
        body: CaptureBody,
        response: responses({ 200: document(ref(Payment), [ref(PaymentIntent)]) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const { payment, intent, paymentIds } = await submitCapture(ctx.db, { clientId: req.client.id, paymentId: req.params.paymentId, amount: req.body.data.attributes.amount, rc, now: ctx.clock.now() });
      return { data: paymentResource(payment, rc), included: intent ? [intentResource(intent, paymentIds, rc.baseUrl, ctx.clock.now())] : [] };
    },
  );

  app.post(
    '/api/v1/payments/:paymentId/cancel',
    {
      schema: {
        tags: TAGS,
        operationId: 'cancelPayment',
        summary: 'Cancel an authorization',
        description: '`Created` → `Canceled`: the reserved funds are released and the intent is canceled. Any other status: 400 `IllegalOperation`. The body is optional and ignored.',
        params: idParams('paymentId'),
        response: responses({ 200: document(ref(Payment)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => ({ data: paymentResource(await cancelPayment(ctx.db, { clientId: req.client.id, paymentId: req.params.paymentId, rc, now: ctx.clock.now() }), rc) }),
  );

  app.post(
    '/api/v1/payments/:paymentId/refund',
    {
      schema: {
        tags: TAGS,
        operationId: 'refundPayment',
        summary: 'Refund a payment',
        description:
          '`Processing` or `Sent` payments; the refunds of a payment add up to at most what was captured. The money goes back where it came from: the bank first, then the wallet\'s deposit, accrue and merchant ' +
          'rewards (or the gift). A `Sent` payment refunded in full becomes `Returned`. `idempotencyKey` is required.',
        params: idParams('paymentId'),
        body: RefundBody,
        response: responses({ 201: document(ref(Refund)) }, [...COMMON_ERRORS, 404, 409]),
      },
    },
    async (req, reply) => {
      const { idempotencyKey, amount } = req.body.data.attributes;
      const ext = await clientAccountIds(ctx.db, req.client.id);
      const outcome = await idempotent(
        reply,
        { clientId: req.client.id, operation: 'refund', key: idempotencyKey, fingerprint: fingerprintOf([req.params.paymentId, { amount }]) },
        { db: ctx.db, clock: ctx.clock },
        async (tx) => {
          const { refund } = await refundPayment(tx, { clientId: req.client.id, paymentId: req.params.paymentId, amount, ext, rc, now: ctx.clock.now() });
          return { status: 201, body: { data: refundResource(refund) } };
        },
      );
      return sendOutcome(reply, outcome);
    },
  );
}

/** Sandbox only: the card network and the bank. */
export async function paymentSimulationRoutes(app: App, ctx: AppContext): Promise<void> {
  const rc = renderContext(ctx);
  const SIM = ['Sandbox simulations'];
  const cardRoute = (step: 'auth' | 'capture' | 'auth-capture', summary: string, description: string) =>
    app.post(
      `/api/v1/simulation/:paymentId/card/${step}`,
      {
        schema: {
          tags: SIM,
          operationId: `simulateCard${step === 'auth' ? 'Auth' : step === 'capture' ? 'Capture' : 'AuthCapture'}`,
          summary,
          description,
          params: idParams('paymentId'),
          querystring: NoQuery,
          body: CardNetworkBody,
          response: responses({ 200: document(ref(Payment)) }, [...COMMON_ERRORS, 402, 404]),
        },
        preValidation: defaultBody({ data: { type: 'CardNetworkEvent', attributes: {} } }),
      },
      async (req) => {
        const o = { clientId: req.client.id, paymentId: req.params.paymentId, amount: req.body.data.attributes.amount, rc, now: ctx.clock.now() };
        let p: PaymentRow | undefined;
        if (step !== 'capture') p = await networkAuthorize(ctx.db, o);
        if (step !== 'auth') p = await networkCapture(ctx.db, { ...o, now: ctx.clock.now() });
        return { data: paymentResource(p!, rc) };
      },
    );
  cardRoute('auth', 'Card network: authorize the virtual card (sandbox)', 'The merchant ran the card: up to the payment\'s amount (default: all of it). For a gift, holds the gift\'s money.');
  cardRoute('capture', 'Card network: capture (sandbox)', 'Captures up to what was authorized on the card (default: all of it) and settles the payment: `Created` → `Sent`; the rest is released.');
  cardRoute('auth-capture', 'Card network: authorize and capture (sandbox)', 'Both steps at once.');

  app.post(
    '/api/v1/simulation/payments/:paymentId/settle',
    {
      schema: {
        tags: SIM,
        operationId: 'simulateSettlement',
        summary: 'Settle a Processing payment now (sandbox)',
        description:
          'The sandbox bank settles a captured payment by itself a second after capture; this settles it now: `Processing` → `Sent` (`Returned` when refunded in full), ' +
          'and its disbursements reach their counterparties. 200 with the payment; any other status is 400 `IllegalOperation`.',
        params: idParams('paymentId'),
        querystring: NoQuery,
        response: responses({ 200: document(ref(Payment)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => ({ data: paymentResource(await settlePaymentNow(ctx.db, { clientId: req.client.id, paymentId: req.params.paymentId, rc, now: ctx.clock.now() }), rc) }),
  );

  app.post(
    '/api/v1/simulation/payments/:paymentId/fail-bank-pull',
    {
      schema: {
        tags: SIM,
        operationId: 'simulateBankPullFailure',
        summary: 'Fail the bank pull of a Processing payment (sandbox)',
        description: '`Processing` → `Failed`: the captured money goes back to the wallet. 200 with the payment.',
        params: idParams('paymentId'),
        querystring: NoQuery,
        body: requestBody(['Payment', 'SimulateBankPullFailure'], Type.Object({ reason: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) }, { additionalProperties: false })),
        response: responses({ 200: document(ref(Payment)) }, [...COMMON_ERRORS, 404]),
      },
      preValidation: defaultBody({ data: { type: 'Payment', attributes: {} } }),
    },
    async (req) => ({ data: paymentResource(await failBankPull(ctx.db, { clientId: req.client.id, paymentId: req.params.paymentId, reason: req.body.data.attributes.reason, rc, now: ctx.clock.now() }), rc) }),
  );
}
