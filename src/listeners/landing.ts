// The addresses the start-up banner prints (the API's /api/v1, the secure card and widget hosts'
// roots, the admin's /admin/v1) answer a plain GET with what the listener is and where to go:
// JSON for an API client, a page of links for a browser (one that asks for text/html).
import type { Config } from '../config.ts';
import type { App } from '../http/server.ts';

export interface Landing {
  title: string;
  /** What this address is and how to call it, in a sentence or two. */
  about: string;
  links: Record<string, string>;
}

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The links every landing gives: the API reference, the OpenAPI document, the console, the guide. */
export function commonLinks(config: Config): Record<string, string> {
  const api = config.listeners.api.publicUrl;
  return {
    reference: `${api}/docs`,
    openapi: `${api}/api/v1/openapi.json`,
    console: config.listeners.console.publicUrl,
    guide: 'docs/getting-started.md in the Coffer repository',
  };
}

/** Registers GET (and HEAD) `paths` answering `landing`. */
export function landingRoutes(app: App, paths: string[], landing: Landing): void {
  const body = { meta: { title: landing.title, about: landing.about }, links: landing.links };
  const page = [
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    `<title>${escape(landing.title)}</title></head><body>`,
    `<h1>${escape(landing.title)}</h1><p>${escape(landing.about)}</p><ul>`,
    ...Object.entries(landing.links).map(([name, href]) =>
      /^https?:\/\//.test(href)
        ? `<li>${escape(name)}: <a href="${escape(href)}">${escape(href)}</a></li>`
        : `<li>${escape(name)}: ${escape(href)}</li>`,
    ),
    '</ul></body></html>',
  ].join('\n');
  for (const url of paths) {
    app.get(url, { schema: { hide: true } }, async (req, reply) => {
      reply.header('vary', 'accept');
      if (/\btext\/html\b/.test(req.headers.accept ?? '')) return reply.type('text/html; charset=utf-8').send(page);
      return reply.type('application/vnd.api+json').send(JSON.stringify(body));
    });
  }
}
