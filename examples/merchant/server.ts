// The example shop's backend. It holds the Coffer secret and does what a browser must never
// do: fetch the widget payload, and start (create, authorize, capture) a payment intent. The
// page it serves embeds the wallet widgets from the Coffer widget host.
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CofferError, coffer, newKey, type CofferAccount } from './coffer.ts';
import type { DemoCustomer } from './seed.ts';

export interface MerchantOptions extends CofferAccount {
  /** The widget host, e.g. http://localhost:3002 */
  payUrl: string;
  /** The signed-in customer (a real shop would take them from its session). */
  customer: DemoCustomer;
  port?: number;
  host?: string;
}

const PUBLIC = new URL('./public/', import.meta.url);
const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};
const CART = { item: 'Single-origin coffee beans, 1 kg', amount: 2_500 };

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

async function readJson(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  return raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
}

export async function startMerchant(opts: MerchantOptions): Promise<{ url: string; close: () => Promise<void> }> {
  const acct: CofferAccount = { api: opts.api, clientId: opts.clientId, secret: opts.secret };
  const payload = async () =>
    (await coffer(acct, 'GET', `/widgets/wallet/${opts.customer.walletId}?purchaseAmount=${CART.amount}`)).data
      .attributes.payload as string;

  /** Create the intent, authorize it with the wallet, capture it: the inline flow's backend half. */
  async function checkout(body: Record<string, unknown>) {
    const reference = String(body.reference ?? `order-${Date.now()}`);
    const intent = await coffer(acct, 'POST', '/payment-intents', {
      data: {
        type: 'CreatePaymentIntent',
        attributes: { amount: CART.amount, walletId: opts.customer.walletId, reference },
      },
    });
    const authorized = await coffer(acct, 'POST', `/payment-intents/${intent.data.id}/authorize`, {
      data: {
        type: 'AuthorizePaymentIntent',
        attributes: {
          amount: CART.amount,
          applyWalletBalance: true,
          idempotencyKey: newKey(),
          reference,
          channel: 'web',
        },
      },
    });
    const payment = (authorized.included as { type: string; id: string; attributes: { status: string } }[]).find(
      (r) => r.type === 'Payment',
    )!;
    const captured =
      payment.attributes.status === 'Created'
        ? await coffer(acct, 'POST', `/payments/${payment.id}/capture`, {
            data: { type: 'CapturePayment', attributes: { amount: CART.amount } },
          })
        : { data: payment };
    return {
      paymentIntentId: intent.data.id,
      walletId: opts.customer.walletId,
      amount: CART.amount,
      reference,
      paymentId: payment.id,
      status: captured.data.attributes.status,
    };
  }

  const server = http.createServer(async (req, res) => {
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    const json = (status: number, body: unknown) => send(status, 'application/json', JSON.stringify(body));
    try {
      const url = new URL(req.url ?? '/', 'http://shop');
      if (req.method === 'GET' && url.pathname === '/') {
        const page = (await readFile(new URL('index.html', PUBLIC), 'utf8'))
          .replaceAll('{{PAY_URL}}', escape(opts.payUrl))
          .replaceAll('{{CLIENT_ID}}', escape(opts.clientId))
          .replaceAll('{{PAYLOAD}}', escape(await payload()))
          .replaceAll('{{ITEM}}', escape(CART.item))
          .replaceAll('{{AMOUNT}}', String(CART.amount))
          .replaceAll('{{REFERENCE}}', `order-${Date.now().toString(36)}`);
        return send(200, 'text/html; charset=utf-8', page);
      }
      if (req.method === 'GET' && /^\/(app\.js|style\.css|favicon\.svg)$/.test(url.pathname)) {
        const file = url.pathname.slice(1);
        return send(200, TYPES[file.slice(file.lastIndexOf('.'))]!, await readFile(new URL(file, PUBLIC), 'utf8'));
      }
      if (req.method === 'GET' && url.pathname === '/api/widget-payload')
        return json(200, { payload: await payload() });
      if (req.method === 'GET' && url.pathname === '/api/me') {
        const c = opts.customer;
        return json(200, { referenceId: c.referenceId, email: c.email, phoneNumber: c.phoneNumber });
      }
      if (req.method === 'POST' && url.pathname === '/api/checkout')
        return json(200, await checkout(await readJson(req)));
      return json(404, { error: 'not found' });
    } catch (err) {
      const status = err instanceof CofferError ? 502 : 500;
      return json(status, { error: err instanceof Error ? err.message : String(err) });
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 4000, opts.host ?? 'localhost', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://localhost:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
