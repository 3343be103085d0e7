// The sandbox's document page, on the widget host ({pay_url}/kyc/documents/{linkId}): what a
// KYC provider's upload page is in live. It needs no documents: it tells the user so and sends
// them back to the merchant's redirectUrl, and the merchant then completes document
// verification. Only links the sandbox's provider made are served, for an hour.
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { FAVICON_LINK } from '../../http/logo.ts';
import type { App } from '../../http/server.ts';
import { sandboxDocumentPageUrl } from '../../providers/kyc.ts';
import { findDocumentLink } from './sql.ts';

const DOCUMENT_PAGE_TTL_MS = 3_600_000;

const CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const page = (title: string, body: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
${FAVICON_LINK}
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}a.button{display:inline-block;padding:.6rem 1.2rem;border-radius:.4rem;background:#1d4ed8;color:#fff;text-decoration:none}</style>
</head>
<body>
<h1>${title}</h1>
${body}
</body>
</html>`;

export async function kycDocumentPageRoutes(app: App, ctx: AppContext): Promise<void> {
  const payUrl = ctx.config.listeners.pay.publicUrl;
  app.get(
    '/kyc/documents/:linkId',
    { schema: { hide: true, params: Type.Object({ linkId: Type.String({ format: 'uuid' }) }) } },
    async (req, reply) => {
      reply.header('content-security-policy', CSP).header('cache-control', 'no-store').type('text/html; charset=utf-8');
      const link = await findDocumentLink(ctx.db, req.params.linkId.toLowerCase());
      const live =
        link &&
        link.url === sandboxDocumentPageUrl(payUrl, link.id) &&
        ctx.clock.now().getTime() - link.createdAt.getTime() < DOCUMENT_PAGE_TTL_MS;
      if (!link || !live) {
        return reply
          .code(404)
          .send(
            page(
              'Link not found',
              '<p>This document verification link is unknown or has expired. Ask for a new one.</p>',
            ),
          );
      }
      return reply.send(
        page(
          'Identity documents (sandbox)',
          `<p>In the sandbox no documents are needed: this page stands in for the KYC provider's upload page.</p>
<p><a class="button" href="${escapeHtml(link.redirectUrl)}">Done, return to the shop</a></p>
<p><small>The shop then completes document verification, and the sandbox decides within a second.</small></p>`,
        ),
      );
    },
  );
}
