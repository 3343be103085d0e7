// The widget host ({pay_url}): main.js, the frame pages /_/{flow}/ with the merchant's widget
// settings rendered in, their assets, and the small API the frames call with the payload (and,
// for the linked-account and PaymentMethods widgets, with their own kinds of token).
import { Type } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { apiError } from '../../http/errors.ts';
import { keyedRateLimit, limitExceeded, SharedRateLimitStore } from '../../http/rate-limit.ts';
import type { App } from '../../http/server.ts';
import { findClient } from '../clients/sql.ts';
import { resolveSettings } from '../clients/settings.ts';
import { FLOWS, type Flow } from '../../widget/protocol.ts';
import { widgetAssets, type Asset } from './bundle.ts';
import {
  checkUser,
  intentView,
  linkedAccountView,
  openWidgetSession,
  paymentMethodsView,
  widgetView,
} from './domain.ts';

const UUID = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

const TITLES: Record<Flow, string> = {
  'wallet-balance': 'Wallet balance',
  'wallet-rewards': 'Wallet rewards',
  'wallet-payment-success': 'Payment complete',
  wallet: 'Pay with your wallet',
};

/** Frames may be embedded anywhere (the payload, not the embedder, is what grants access). */
const FRAME_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors *";

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function sendAsset(req: FastifyRequest, reply: FastifyReply, a: Asset, cache: string) {
  // nosniff and a cross-origin resource policy (merchant pages load these) come from helmet (pay.ts).
  reply.header('content-type', a.contentType).header('etag', a.etag).header('cache-control', cache);
  if (req.headers['if-none-match'] === a.etag) return reply.code(304).send();
  return reply.send(a.body);
}

const FrameQuery = Type.Object(
  {
    client: Type.String({ pattern: UUID }),
    origin: Type.Optional(Type.String({ maxLength: 300 })),
    wallet: Type.Optional(Type.String({ pattern: UUID })),
    amount: Type.Optional(Type.String({ pattern: '^[0-9]{1,13}$' })),
    reference: Type.Optional(Type.String({ maxLength: 255 })),
    v: Type.Optional(Type.String({ maxLength: 40 })),
  },
  { additionalProperties: false },
);

export async function widgetHostRoutes(app: App, ctx: AppContext): Promise<void> {
  const assets = await widgetAssets();
  const key = ctx.config.widgetSigningKey!;
  const base = ctx.config.listeners.api.publicUrl;

  app.get('/main.js', { schema: { hide: true } }, (req, reply) =>
    sendAsset(req, reply, assets.mainJs, 'public, max-age=300'),
  );
  // Versioned by query string from the frame pages, so they can be kept a long time.
  app.get('/_/assets/frame.js', { schema: { hide: true } }, (req, reply) =>
    sendAsset(req, reply, assets.frameJs, 'public, max-age=31536000, immutable'),
  );
  app.get('/_/assets/frame.css', { schema: { hide: true } }, (req, reply) =>
    sendAsset(req, reply, assets.frameCss, 'public, max-age=31536000, immutable'),
  );

  app.get(
    '/_/:flow/',
    { schema: { hide: true, params: Type.Object({ flow: Type.Enum([...FLOWS]) }), querystring: FrameQuery } },
    async (req, reply) => {
      const client = await findClient(ctx.db, req.query.client.toLowerCase());
      if (!client || client.disabled) throw apiError('ClientNotFound', 'The widget names an unknown client.');
      const flow = req.params.flow as Flow;
      const w = resolveSettings(client.settings).widget;
      // The merchant's customization is applied here, on the host: the page carries it.
      const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(TITLES[flow])}</title>
<link rel="stylesheet" href="/_/assets/frame.css?v=${assets.version}">
</head>
<body class="text-${w.textStyle}" data-flow="${flow}" data-settings="${escapeHtml(JSON.stringify(w))}">
<main id="app" aria-label="${escapeHtml(TITLES[flow])}" aria-busy="true"><p class="caption">Loading your wallet…</p></main>
<div id="status" class="visually-hidden" role="status" aria-live="polite"></div>
<script src="/_/assets/frame.js?v=${assets.version}" defer></script>
</body>
</html>
`;
      reply
        .header('content-type', 'text/html; charset=utf-8')
        .header('cache-control', 'no-store')
        .header('content-security-policy', FRAME_CSP);
      return html;
    },
  );

  const session = (req: FastifyRequest) =>
    openWidgetSession(ctx.db, {
      authorization: req.headers.authorization,
      clientId: req.headers['x-client-id'],
      key,
      now: ctx.clock.now(),
    });
  const noStore = (reply: FastifyReply) => reply.header('cache-control', 'no-store').type('application/vnd.api+json');

  app.get(
    '/_/api/widget-data',
    {
      schema: {
        hide: true,
        querystring: Type.Object(
          {
            amount: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000_000 })),
            reference: Type.Optional(Type.String({ maxLength: 255 })),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (req, reply) => {
      const s = await session(req);
      noStore(reply);
      return {
        data: { id: s.wallet.id, type: 'WalletWidgetView', attributes: await widgetView(ctx.db, s, req.query) },
      };
    },
  );

  // The user check answers whether a phone number is the wallet's: limited per address, and
  // per wallet over an hour (whoever holds a payload cannot walk through phone numbers).
  const { userCheckPerMinute, userCheckPerWalletPerHour } = ctx.config.rateLimit;
  const walletChecks = new SharedRateLimitStore({
    db: ctx.db,
    clock: ctx.clock,
    log: ctx.log,
    windowMs: 3_600_000,
    syncIntervalMs: ctx.config.rateLimit.syncIntervalMs,
    prefix: `${ctx.config.environment}:user-check-wallet:`,
  });
  app.addHook('onClose', () => walletChecks.close());

  app.post(
    '/_/api/user-check',
    {
      onRequest: keyedRateLimit(app, {
        perMinute: userCheckPerMinute,
        key: (req) => `user-check:${req.ip}`,
        what: 'from this address to the user check',
      }),
      schema: {
        hide: true,
        body: Type.Object(
          {
            phoneNumber: Type.Optional(Type.String({ maxLength: 32 })),
            email: Type.Optional(Type.String({ maxLength: 254 })),
            referenceId: Type.Optional(Type.String({ maxLength: 255 })),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (req, reply) => {
      const s = await session(req);
      const { current, ttl } = await walletChecks.count(s.wallet.id);
      if (current > userCheckPerWalletPerHour)
        throw limitExceeded(`More than ${userCheckPerWalletPerHour} user checks of this wallet in an hour`, ttl);
      noStore(reply);
      return { data: { id: s.wallet.id, type: 'WalletUserCheck', attributes: checkUser(s, req.body) } };
    },
  );

  app.get(
    '/_/api/payment-intents/:intentId',
    { schema: { hide: true, params: Type.Object({ intentId: Type.String({ pattern: UUID }) }) } },
    async (req, reply) => {
      const s = await session(req);
      noStore(reply);
      return {
        data: await intentView(ctx.db, s, {
          intentId: req.params.intentId.toLowerCase(),
          baseUrl: base,
          now: ctx.clock.now(),
        }),
      };
    },
  );

  // Tokens of the other kinds: each is accepted only here, and wallet payloads are not.
  const hostRequest = (req: FastifyRequest) => ({
    authorization: req.headers.authorization,
    clientId: req.headers['x-client-id'],
    key,
    now: ctx.clock.now(),
  });

  app.get(
    '/_/api/linked-account',
    { schema: { hide: true, querystring: Type.Object({}, { additionalProperties: false }) } },
    async (req, reply) => {
      const view = await linkedAccountView(ctx.db, hostRequest(req));
      noStore(reply);
      return { data: { id: view.linkedAccountId, type: 'LinkedAccountWidgetView', attributes: view } };
    },
  );

  app.get(
    '/_/api/payment-methods',
    { schema: { hide: true, querystring: Type.Object({}, { additionalProperties: false }) } },
    async (req, reply) => {
      const view = await paymentMethodsView(ctx.db, hostRequest(req));
      noStore(reply);
      return { data: { id: view.widgetType, type: 'PaymentMethodsWidgetView', attributes: view } };
    },
  );
}
