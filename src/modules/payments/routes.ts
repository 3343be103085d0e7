import { refuseOverMaxAmount } from '../clients/settings.ts';
import { Type } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { notFoundAsAccrue } from '../../http/errors.ts';
import type { AppContext } from '../../context.ts';
import type { Tx } from '../../db/open.ts';
import { fingerprintOf, keyedOrPlain, sendOutcome, type Outcome } from '../../http/idempotency.ts';
import { pageLinks, pageOf, parseInclude, parseSort } from '../../http/paging.ts';
import { wrappedOrBare } from '../../http/patch-body.ts';
import {
  COMMON_ERRORS,
  JSONAPI,
  defaultBody,
  document,
  idParams,
  listDocument,
  ref,
  requestBody,
  responses,
} from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { clientAccountIds } from '../../ledger/accounts.ts';
import { intentResource } from '../payment-intents/render.ts';
import { renderContext } from './render.ts';
import { PaymentIntent } from '../payment-intents/schemas.ts';
import { findIntent, intentsByIds } from '../payment-intents/sql.ts';
import { submitCancel } from './cancel-groups.ts';
import { submitCapture } from './capture-groups.ts';
import { submitDirectPayment } from './direct-groups.ts';
import { submitRefund } from './refund-groups.ts';
import {
  completePayment,
  failBankPull,
  getPayment,
  increaseAuthorization,
  listCaptures,
  listCardAuthorizations,
  networkAuthorize,
  networkAuthorizeCapture,
  networkCapture,
  refundsByPayment,
  settlePaymentNow,
  updatePaymentReference,
  type ChangedPayment,
} from './domain.ts';
import { authorizationRequestResource, captureResource, paymentResource, refundResource } from './render.ts';
import {
  AuthorizationRequest,
  Capture,
  CaptureBody,
  CardNetworkBodies,
  CreatePaymentBody,
  IncreaseAuthorizationBody,
  IntentIncludeQuery,
  ListAuthorizationRequestsQuery,
  ListCapturesQuery,
  ListPaymentsQuery,
  Payment,
  PaymentQuery,
  Refund,
  RefundBody,
  UpdatePaymentBodies,
} from './schemas.ts';
import {
  CAPTURE_SORT_FIELDS,
  PAYMENT_SORT_FIELDS,
  captureRows,
  listPaymentRows,
  paymentIdsOfIntent,
  paymentIdsOfListedIntents,
  type PaymentRow,
} from './sql.ts';

const TAGS = ['Payments'];
const NoQuery = Type.Object({}, { additionalProperties: false });

/** Accrue's answer to a payment action: the payment, `links.self` (this request) and its intent in `included` (always present). */
const PaymentActionDocument = Type.Object({
  data: ref(Payment),
  links: Type.Object({ self: Type.String() }),
  included: Type.Array(ref(PaymentIntent)),
});

/** Accrue's answer to a refund: the payment with its refunds and captures, the new Refund in `included`, `meta.refundId` naming it. */
const RefundDocument = Type.Object({
  data: ref(Payment),
  links: Type.Object({ self: Type.String() }),
  included: Type.Array(ref(Refund)),
  meta: Type.Object({
    message: Type.String(),
    refundId: Type.String({ description: 'The id of the Refund this request made (in `included`)' }),
  }),
});

export async function paymentRoutes(app: App, ctx: AppContext): Promise<void> {
  const rc = renderContext(ctx);

  /** Payments with what `include` asks for. */
  const render = async (clientId: string, rows: PaymentRow[], include: Set<string>) => {
    const refunds = include.has('refunds')
      ? await refundsByPayment(
          ctx.db,
          rows.map((p) => p.id),
        )
      : undefined;
    const data = rows.map((p) =>
      paymentResource(p, rc, { refunds: refunds ? (refunds.get(p.id) ?? []) : undefined, withProcessor: true }),
    );
    const included: unknown[] = [];
    if (include.has('paymentIntent')) {
      const intents = await intentsByIds(ctx.db, clientId, [
        ...new Set(rows.flatMap((p) => (p.intentId ? [p.intentId] : []))),
      ]);
      const theirPayments = await paymentIdsOfListedIntents(
        ctx.db,
        intents.map((i) => i.id),
      );
      const now = ctx.clock.now();
      included.push(...intents.map((i) => intentResource(i, theirPayments.get(i.id)!, rc.baseUrl, now)));
    }
    if (include.has('captures'))
      included.push(
        ...(
          await captureRows(
            ctx.db,
            clientId,
            rows.map((p) => p.id),
            { success: true, sort: [{ field: 'createdAt', descending: false }] },
          )
        ).rows.map(captureResource),
      );
    if (refunds) included.push(...[...refunds.values()].flat().map(refundResource));
    return { data, included };
  };

  const self = (req: FastifyRequest) => ({ self: `${rc.baseUrl}${req.url}` });
  const includedIntent = (c: ChangedPayment) =>
    c.intent ? [intentResource(c.intent, c.paymentIds, rc.baseUrl, ctx.clock.now())] : [];
  /** Runs a write under its idempotency key when the caller sent one (same rules as deposits), else in a plain transaction. */
  const keyed = async (
    reply: FastifyReply,
    scope: { clientId: string; operation: string; key?: string; fingerprint: unknown },
    run: (tx: Tx) => Promise<Outcome>,
  ) =>
    sendOutcome(
      reply,
      await keyedOrPlain(
        reply,
        { ...scope, key: scope.key, fingerprint: fingerprintOf(scope.fingerprint) },
        { db: ctx.db, clock: ctx.clock },
        run,
      ),
    );

  app.post(
    '/api/v1/payments',
    {
      schema: {
        tags: TAGS,
        operationId: 'createPayment',
        summary: 'Take a payment from a wallet (and linked account)',
        description:
          '`amount` is the whole purchase. `externalPayments` (cash and the like) are recorded, not moved; the rest is paid from the wallet (merchant rewards, accrue rewards, deposit), ' +
          "then the `linkedAccountId` (up to the merchant's bankFundingLimit). The payment starts `Processing` and settles to `Sent`, when `disbursement` reaches its counterparties. " +
          'Needs KYC `Approved`. `idempotencyKey` optional (same rules as deposits).',
        body: CreatePaymentBody,
        response: responses({ 200: document(ref(Payment)) }, [...COMMON_ERRORS, 402, 409]),
      },
    },
    async (req, reply) => {
      const { idempotencyKey, ...attributes } = req.body.data.attributes;
      refuseOverMaxAmount(attributes.amount, req.client.settings, '/data/attributes/amount');
      const ext = await clientAccountIds(ctx.db, req.client.id);
      const serialize = reply.getSerializationFunction('200', JSONAPI) ?? JSON.stringify;
      const outcome = await submitDirectPayment(ctx.db, {
        scope: {
          clientId: req.client.id,
          operation: 'payment',
          key: idempotencyKey,
          fingerprint: fingerprintOf(attributes),
        },
        input: { clientId: req.client.id, settings: req.client.settings, ...attributes, ext, rc, now: ctx.clock.now() },
        render: (p) => serialize({ data: paymentResource(p, rc) }),
      });
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
        response: responses(
          { 200: listDocument(ref(Payment), [ref(PaymentIntent), ref(Capture), ref(Refund)]) },
          COMMON_ERRORS,
        ),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const include = parseInclude(req.query.include, ['paymentIntent', 'captures', 'refunds'] as const);
      const sort = parseSort(req.query.sort, PAYMENT_SORT_FIELDS, '-createdAt');
      const { rows, total } = await listPaymentRows(
        ctx.db,
        req.client.id,
        {
          status: req.query['filter[status]'],
          paymentIntentId: req.query['filter[paymentIntentId]'],
          reference: req.query['filter[reference]'],
          channel: req.query['filter[channel]'],
        },
        sort,
        page,
      );
      const { data, included } = await render(req.client.id, rows, include);
      return {
        data,
        ...(include.size > 0 ? { included } : {}),
        meta: { total, ...page },
        links: pageLinks(rc.baseUrl, req.url, page, total),
      };
    },
  );

  app.get(
    '/api/v1/payments/:paymentId',
    {
      schema: {
        tags: TAGS,
        operationId: 'getPayment',
        summary: 'Get a payment',
        description: '`included` is always present (empty without `include`).',
        params: idParams('paymentId'),
        querystring: PaymentQuery,
        response: responses(
          {
            200: Type.Object({
              data: ref(Payment),
              included: Type.Array(Type.Union([ref(PaymentIntent), ref(Refund)])),
            }),
          },
          [...COMMON_ERRORS, 404],
        ),
      },
    },
    async (req) => {
      const include = parseInclude(req.query.include, ['paymentIntent', 'refunds'] as const);
      const p = await getPayment(ctx.db, { clientId: req.client.id, paymentId: req.params.paymentId });
      const { data, included } = await render(req.client.id, [p], include);
      return { data: data[0]!, included };
    },
  );

  app.post(
    '/api/v1/payments/:paymentId/capture',
    {
      schema: {
        tags: TAGS,
        operationId: 'capturePayment',
        summary: 'Capture an authorized payment (bank rails)',
        description:
          '`Created` → `Processing`. At most the authorized amount; the uncaptured rest is released to the wallet. Card-rail and gift payments are captured through the card network. ' +
          'A payment that cannot be captured here (not `Created`, or card rails) is 402 `IllegalOperation`: the capture fails (402 is the failure status Accrue declares for capture).',
        params: idParams('paymentId'),
        body: CaptureBody,
        response: responses({ 200: PaymentActionDocument }, [...COMMON_ERRORS, 402, 404]),
      },
    },
    async (req) => {
      const captured = await submitCapture(ctx.db, {
        clientId: req.client.id,
        paymentId: req.params.paymentId,
        amount: req.body.data.attributes.amount,
        rc,
        now: ctx.clock.now(),
      });
      return { data: paymentResource(captured.payment, rc), links: self(req), included: includedIntent(captured) };
    },
  );

  app.post(
    '/api/v1/payments/:paymentId/cancel',
    {
      schema: {
        tags: TAGS,
        operationId: 'cancelPayment',
        summary: 'Cancel an authorization',
        description:
          '`Created` → `Canceled`: the reserved funds are released and the intent is canceled (it is always in `included`). Any other status: 400 `IllegalOperation`. The body is optional and ignored.',
        params: idParams('paymentId'),
        querystring: IntentIncludeQuery,
        response: responses({ 200: PaymentActionDocument }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      parseInclude(req.query.include, ['paymentIntent'] as const);
      const canceled = await submitCancel(ctx.db, {
        clientId: req.client.id,
        paymentId: req.params.paymentId,
        rc,
        now: ctx.clock.now(),
      });
      return { data: paymentResource(canceled.payment, rc), links: self(req), included: includedIntent(canceled) };
    },
  );

  const { body: UpdatePaymentBody, options: updateOptions } = wrappedOrBare(UpdatePaymentBodies);
  app.patch(
    '/api/v1/payments/:paymentId',
    {
      schema: {
        tags: TAGS,
        operationId: 'updatePayment',
        summary: "Update a payment's reference",
        description:
          'Sets (or, with null, clears) `reference`, in any status; `PaymentUpdated` fires when it changes. The body may omit the `data` wrapper (`{id, type, attributes}`, as Accrue sends it). ' +
          "An `id` in the body must be the path's id: otherwise 409 `Conflict` and nothing changes.",
        params: idParams('paymentId'),
        body: UpdatePaymentBody,
        response: responses({ 200: document(ref(Payment)) }, [...COMMON_ERRORS, 404, 409]),
      },
      ...updateOptions,
    },
    async (req) => {
      const { data } = req.body as { data: { id?: string; attributes: { reference: string | null } } };
      const p = await updatePaymentReference(ctx.db, {
        clientId: req.client.id,
        paymentId: req.params.paymentId,
        bodyId: data.id,
        reference: data.attributes.reference,
        rc,
        now: ctx.clock.now(),
      });
      return { data: paymentResource(p, rc) };
    },
  );

  app.patch(
    '/api/v1/payments/:paymentId/increase-authorization',
    {
      schema: {
        tags: TAGS,
        operationId: 'increaseAuthorization',
        summary: 'Increase the authorized amount of a Created payment',
        description:
          "Reserves `increase` more cents from the wallet (merchant rewards, accrue rewards, then deposit) and adds them to the payment's `amount`; a card-rail payment's card may then be authorized for the new amount. " +
          'The wallet alone pays for an increase: when it cannot cover all of it, 402 `Failed` and nothing changes. Only `Created` wallet payments of an `Active`, KYC-approved wallet (otherwise 402 `IllegalOperation`, `WalletClosed` or `InvalidKycStatus`: 402 is the failure status Accrue declares). ' +
          '`idempotencyKey` is optional (same rules as deposits).',
        params: idParams('paymentId'),
        body: IncreaseAuthorizationBody,
        response: responses({ 200: PaymentActionDocument }, [...COMMON_ERRORS, 402, 404, 409]),
      },
    },
    async (req, reply) => {
      const { increase, idempotencyKey } = req.body.data.attributes;
      return keyed(
        reply,
        {
          clientId: req.client.id,
          operation: 'increase-authorization',
          key: idempotencyKey,
          fingerprint: [req.params.paymentId, { increase }],
        },
        async (tx) => {
          const increased = await increaseAuthorization(tx, {
            clientId: req.client.id,
            paymentId: req.params.paymentId,
            increase,
            settings: req.client.settings,
            rc,
            now: ctx.clock.now(),
          });
          return {
            status: 200,
            body: {
              data: paymentResource(increased.payment, rc),
              links: self(req),
              included: includedIntent(increased),
            },
          };
        },
      );
    },
  );

  app.post(
    '/api/v1/payments/:paymentId/complete',
    {
      schema: {
        tags: TAGS,
        operationId: 'completePayment',
        summary: 'Complete a card-rail payment',
        description:
          "Card-rail and gift payments. The card network's capture completes the payment in Coffer (the uncaptured rest goes back to the wallet then), so a `Sent` (or `Returned`) payment is answered as it is, " +
          'and nothing changes. `Created` with nothing captured: 402 `Failed` (capture on the card network, or cancel). Bank rails or any other status: 402 `IllegalOperation`.',
        params: idParams('paymentId'),
        querystring: IntentIncludeQuery,
        response: responses({ 200: PaymentActionDocument }, [...COMMON_ERRORS, 402, 404]),
      },
    },
    async (req) => {
      parseInclude(req.query.include, ['paymentIntent'] as const);
      const p = await completePayment(ctx.db, { clientId: req.client.id, paymentId: req.params.paymentId });
      const intent = p.intentId ? await findIntent(ctx.db, req.client.id, p.intentId) : undefined;
      const included = includedIntent({
        payment: p,
        intent,
        paymentIds: intent ? await paymentIdsOfIntent(ctx.db, intent.id) : [],
      });
      return { data: paymentResource(p, rc), links: self(req), included };
    },
  );

  app.post(
    '/api/v1/payments/:paymentId/refund',
    {
      schema: {
        tags: TAGS,
        operationId: 'refund',
        summary: 'Refund a payment',
        description:
          "`Processing` or `Sent` payments; the refunds of a payment add up to at most what was captured. The money goes back where it came from: the bank first, then the wallet's deposit, accrue and merchant " +
          'rewards (or the gift). A `Sent` payment refunded in full becomes `Returned`. `idempotencyKey` is required. ' +
          "Answers 200 (Accrue's status) with the payment, its `refunds` and `captures` relationships, the new Refund in `included` and its id in `meta.refundId`.",
        params: idParams('paymentId'),
        body: RefundBody,
        response: responses({ 200: RefundDocument }, [...COMMON_ERRORS, 404, 409]),
      },
    },
    async (req, reply) => {
      const { idempotencyKey, amount } = req.body.data.attributes;
      const ext = await clientAccountIds(ctx.db, req.client.id);
      const serialize = reply.getSerializationFunction('200', JSONAPI) ?? JSON.stringify;
      const outcome = await submitRefund(ctx.db, {
        scope: {
          clientId: req.client.id,
          operation: 'refund',
          key: idempotencyKey,
          fingerprint: fingerprintOf([req.params.paymentId, { amount }]),
        },
        clientId: req.client.id,
        paymentId: req.params.paymentId,
        amount,
        ext,
        rc,
        now: ctx.clock.now(),
        render: ({ refund, payment, refunds, captures }) =>
          serialize({
            data: paymentResource(payment, rc, { refunds, captures }),
            links: self(req),
            included: [refundResource(refund)],
            meta: { message: `Refunded ${amount} cents.`, refundId: refund.id },
          }),
      });
      return sendOutcome(reply, outcome);
    },
  );
}

/** Sandbox only: the card network and the bank. */
export async function paymentSimulationRoutes(app: App, ctx: AppContext): Promise<void> {
  const rc = renderContext(ctx);
  const SIM = ['Sandbox simulations'];
  const cardRoute = (
    step: 'auth' | 'capture' | 'auth-capture',
    operationId: string,
    summary: string,
    description: string,
  ) =>
    app.post(
      `/api/v1/simulation/:paymentId/card/${step}`,
      {
        schema: {
          tags: SIM,
          operationId,
          summary,
          description,
          params: idParams('paymentId'),
          querystring: NoQuery,
          body: CardNetworkBodies[step],
          response: responses(
            {
              200:
                step === 'auth-capture'
                  ? Type.Object({
                      data: ref(Payment),
                      included: Type.Array(Type.Union([ref(AuthorizationRequest), ref(Capture)])),
                      success: Type.Boolean({
                        description: "Accrue's member: true (a declined step is a 402 error document)",
                      }),
                      error: Type.Null({ description: "Accrue's member: null on success" }),
                    })
                  : document(ref(Payment), [ref(AuthorizationRequest), ref(Capture)]),
            },
            [...COMMON_ERRORS, 402, 404],
          ),
        },
        preValidation: defaultBody({ data: { type: 'CardNetworkEvent', attributes: {} } }),
      },
      async (req) => {
        const attributes = (req.body as { data: { attributes: { amount?: number; authorizationRequestId?: string } } })
          .data.attributes;
        const o = {
          clientId: req.client.id,
          paymentId: req.params.paymentId,
          amount: attributes.amount,
          rc,
          now: ctx.clock.now(),
        };
        if (step === 'auth') {
          const auth = await networkAuthorize(ctx.db, o);
          return {
            data: paymentResource(auth.payment, rc),
            included: [authorizationRequestResource(auth.authorization, auth.payment.walletId)],
          };
        }
        if (step === 'capture') {
          const cap = await networkCapture(ctx.db, { ...o, authorizationRequestId: attributes.authorizationRequestId });
          return { data: paymentResource(cap.payment, rc), included: [captureResource(cap.capture)] };
        }
        const both = await networkAuthorizeCapture(ctx.db, o);
        return {
          data: paymentResource(both.payment, rc),
          included: [
            authorizationRequestResource(both.authorization, both.payment.walletId),
            captureResource(both.capture),
          ],
          success: true,
          error: null,
        };
      },
    );
  const recorded =
    'A decline (over what the payment or the gift has left) is recorded as a `Declined` AuthorizationRequest and answered 402.';
  cardRoute(
    'auth',
    'simulateCardAuthorization',
    'Card network: authorize the virtual card (sandbox)',
    `The merchant ran the card: up to the payment's amount (default: all of it). For a gift, holds the gift's money. The AuthorizationRequest is in \`included\`. ${recorded}`,
  );
  cardRoute(
    'capture',
    'simulateCardCapture',
    'Card network: capture (sandbox)',
    'Captures up to what was authorized on the card (default: all of it) and settles the payment: `Created` → `Sent`; the rest is released. ' +
      'More than was authorized is a refused capture (recorded with `success: false`, 402). The Capture is in `included`.',
  );
  cardRoute(
    'auth-capture',
    'simulateCardAuthorizationCapture',
    'Card network: authorize and capture (sandbox)',
    "Both steps in one transaction (both commit or neither); both records are in `included`, and Accrue's `success` (true) and `error` (null) members are at the top level. " +
      'A repeat of the auth-capture that captured the card (the same `amount`, or none when it took all that was left) answers its records again and moves no money.',
  );

  app.get(
    '/api/v1/simulation/:paymentId/card/auth',
    {
      schema: {
        tags: SIM,
        operationId: 'getAuthorizationRequestList',
        summary: "The card network's authorization requests of a payment (sandbox)",
        description:
          'Newest first: `Approved`, `Declined`, and `Canceled` (approved, then the payment was canceled or expired uncaptured).',
        params: idParams('paymentId'),
        querystring: ListAuthorizationRequestsQuery,
        response: responses({ 200: listDocument(ref(AuthorizationRequest)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const { payment, rows, total } = await notFoundAsAccrue(
        listCardAuthorizations(ctx.db, { clientId: req.client.id, paymentId: req.params.paymentId, page }),
      );
      return {
        data: rows.map((a) => authorizationRequestResource(a, payment.walletId)),
        meta: { total, ...page },
        links: pageLinks(rc.baseUrl, req.url, page, total),
      };
    },
  );

  app.get(
    '/api/v1/simulation/:paymentId/card/capture',
    {
      schema: {
        tags: SIM,
        operationId: 'getCapturesList',
        summary: 'The captures of a payment (sandbox)',
        description:
          "The card network's captures (`VirtualDebitCard`, refused ones with `success: false`), or a captured bank-rail payment's one capture (`BankRails`, `Direct` for POST /payments). " +
          'Default sort `-createdAt`; `include=payment` adds the Payment.',
        params: idParams('paymentId'),
        querystring: ListCapturesQuery,
        response: responses({ 200: listDocument(ref(Capture), [ref(Payment)]) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const include = parseInclude(req.query.include, ['payment'] as const);
      const sort = parseSort(req.query.sort, CAPTURE_SORT_FIELDS, '-createdAt');
      const { payment, rows, total } = await notFoundAsAccrue(
        listCaptures(ctx.db, {
          clientId: req.client.id,
          paymentId: req.params.paymentId,
          method: req.query['filter[method]'],
          success: req.query['filter[success]'],
          sort,
          page,
        }),
      );
      return {
        data: rows.map(captureResource),
        ...(include.size > 0 ? { included: [paymentResource(payment, rc)] } : {}),
        meta: { total, ...page },
        links: pageLinks(rc.baseUrl, req.url, page, total),
      };
    },
  );

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
    async (req) => ({
      data: paymentResource(
        await settlePaymentNow(ctx.db, {
          clientId: req.client.id,
          paymentId: req.params.paymentId,
          rc,
          now: ctx.clock.now(),
        }),
        rc,
      ),
    }),
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
        body: requestBody(
          ['Payment', 'SimulateBankPullFailure'],
          Type.Object(
            { reason: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) },
            { additionalProperties: false },
          ),
        ),
        response: responses({ 200: document(ref(Payment)) }, [...COMMON_ERRORS, 404]),
      },
      preValidation: defaultBody({ data: { type: 'Payment', attributes: {} } }),
    },
    async (req) => ({
      data: paymentResource(
        await failBankPull(ctx.db, {
          clientId: req.client.id,
          paymentId: req.params.paymentId,
          reason: req.body.data.attributes.reason,
          rc,
          now: ctx.clock.now(),
        }),
        rc,
      ),
    }),
  );
}
