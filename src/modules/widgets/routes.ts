import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { COMMON_ERRORS, Timestamp, document, idParams, ref, resource, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { issueWidgetPayload } from './domain.ts';

export const WalletWidgetData = resource(
  'WalletWidgetData',
  'WalletWidgetData',
  {
    payload: Type.String({ description: 'Base64 of a signed token naming the client, wallet and user; give it to main.js (`data-wallet-widget` or `servicePay.setWalletWidgetData`)' }),
    expiresAt: Timestamp({ description: '15 minutes after issue' }),
  },
  { description: "A wallet's widget payload; its id is the token's id." },
);

export const schemas = [WalletWidgetData];

export async function widgetRoutes(app: App, ctx: AppContext): Promise<void> {
  app.get(
    '/api/v1/widgets/wallet/:walletId',
    {
      schema: {
        tags: ['Widgets'],
        operationId: 'getWalletWidgetData',
        summary: 'Get the payload for embeddable wallet widgets',
        description:
          "Call it from your backend (it needs the secret) and pass `payload` to the page. The widget host verifies it and shows only this wallet's data; " +
          'it expires after 15 minutes, and ends early when the user\'s phone number changes through a verified profile update. ' +
          '`purchaseAmount` (cents) goes into the payload as the amount widgets use when the page gives none.',
        params: idParams('walletId'),
        querystring: Type.Object({ purchaseAmount: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000_000 })) }, { additionalProperties: false }),
        response: responses({ 200: document(ref(WalletWidgetData)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const out = await issueWidgetPayload(ctx.db, { clientId: req.client.id, walletId: req.params.walletId, purchaseAmount: req.query.purchaseAmount, key: ctx.config.widgetSigningKey!, now: ctx.clock.now() });
      return { data: { id: out.id, type: 'WalletWidgetData' as const, attributes: { payload: out.payload, expiresAt: out.expiresAt.toISOString() } } };
    },
  );
}
