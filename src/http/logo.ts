// Coffer's logo mark (a strongbox on a blue tile) and the favicon routes of the listeners that
// serve HTML: the console, the widget host and the API's /docs. /favicon.ico answers too, for
// browsers and tools that ask for it without reading the page's <link rel="icon">.
import type { App } from './server.ts';

export const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32" role="img" aria-label="Coffer">
<rect width="32" height="32" rx="7" fill="#1d4ed8"/>
<path d="M7 14a9 5 0 0 1 18 0z" fill="#fff"/>
<rect x="7" y="15.5" width="18" height="10" rx="1.5" fill="#fff"/>
<circle cx="16" cy="19.4" r="1.9" fill="#1d4ed8"/>
<path d="M15.1 20.2h1.8l.6 3.3h-3z" fill="#1d4ed8"/>
</svg>
`;

/** The page's icon link, for a <head>. */
export const FAVICON_LINK = '<link rel="icon" href="/favicon.svg" type="image/svg+xml">';

export function faviconRoutes(app: App): void {
  const body = Buffer.from(LOGO_SVG);
  for (const url of ['/favicon.svg', '/favicon.ico'])
    app.get(url, { schema: { hide: true } }, async (_req, reply) =>
      reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(body),
    );
}
