// Server-rendered HTML: a tagged template that escapes every interpolated value unless it is
// already Html (built by this template), so no text from the database or the request reaches
// the page unescaped. No client-side script: links, forms and inline SVG only.
import { FAVICON_LINK, LOGO_SVG } from '../http/logo.ts';

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!);
}

type Part = Html | string | number | boolean | null | undefined | Date | readonly Part[];

function render(v: Part): string {
  if (v === null || v === undefined || v === false) return '';
  if (v instanceof Html) return v.value;
  if (Array.isArray(v)) return v.map(render).join('');
  if (v instanceof Date) return escapeHtml(v.toISOString());
  return escapeHtml(String(v));
}

/** html`<p>${text}</p>`: interpolations are escaped; Html values and arrays of them are kept. */
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** Markup made elsewhere and known safe (the SVG charts build theirs from numbers). */
export const trusted = (s: string) => new Html(s);

/** Cents as US dollars: 123456 → "$1,234.56", -500 → "-$5.00". */
export function money(cents: number | null | undefined): string {
  if (cents === null || cents === undefined) return '';
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}$${Math.floor(abs / 100).toLocaleString('en-US')}.${String(abs % 100).padStart(2, '0')}`;
}

export function when(d: Date | null | undefined): Html {
  if (!d) return html``;
  return html`<time datetime="${d.toISOString()}">${d.toISOString().replace('T', ' ').slice(0, 19)}</time>`;
}

/** A query string from the non-empty values (for links that keep a page's filters). */
function queryString(params: Record<string, string | number | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}

export function badge(status: string | null | undefined): Html {
  if (!status) return html``;
  const tone = /^(Sent|Cleared|Approved|Succeeded|succeeded|Captured|Completed|Settled|2\d\d|enabled)$/.test(status)
    ? 'ok'
    : /^(Failed|Denied|Canceled|Declined|Returned|failed|Expired|5\d\d|4\d\d|disabled)$/.test(status)
      ? 'bad'
      : 'wait';
  return html`<span class="badge ${tone}">${status}</span>`;
}

export interface PageNav {
  /** Where each link of the header goes (merchant pages), or none (sign-in). */
  nav?: { href: string; label: string; current?: boolean }[];
  who?: string;
  csrf?: string;
  environment: string;
}

export function layout(title: string, body: Html, o: PageNav): string {
  return `<!doctype html>${
    html`<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Coffer console</title>${trusted(FAVICON_LINK)}<link rel="stylesheet" href="/console.css"></head>
<body><header><a class="brand" href="/">${trusted(LOGO_SVG)}Coffer</a>${o.environment === 'sandbox' ? html`<span class="env">sandbox</span>` : html`<span class="env live">live</span>`}
<nav>${(o.nav ?? []).map((n) => html`<a href="${n.href}"${n.current ? trusted(' aria-current="page"') : ''}>${n.label}</a>`)}</nav>
${o.who ? html`<form method="post" action="/sign-out" class="signout"><span>${o.who}</span><input type="hidden" name="_csrf" value="${o.csrf ?? ''}"><button>Sign out</button><button class="quiet" formaction="/sign-out-everywhere">Sign out everywhere</button></form>` : ''}
</header><main><h1>${title}</h1>${body}</main></body></html>`.value
  }`;
}

// What a page shows after an action's redirect. The address names a message by its code (and a
// count, `n`); its text comes from here, so a link cannot put words of its own on a console page.
// An unknown code shows nothing.
const NOTICES = {
  'kyc-approved': 'KYC approved.',
  'kyc-declined': 'KYC declined.',
  'bank-deposits-cleared': (n: number) => `${n} pending bank deposit${n === 1 ? '' : 's'} cleared.`,
  'card-deposits-cleared': (n: number) => `${n} pending card deposit${n === 1 ? '' : 's'} cleared.`,
  'card-captured': 'The card network authorized and captured the payment.',
  'payment-settled': 'The payment settled.',
  'bank-pull-failed': 'The bank pull failed.',
  'replay-queued': (n: number) => `Replay queued (${n} pending replay deliver${n === 1 ? 'y' : 'ies'}).`,
  'merchant-disabled': 'Disabled: its API calls are refused.',
  'merchant-enabled': 'Enabled.',
  'secret-deleted': 'Secret deleted: API calls with it are refused, and console sessions signed in with it ended.',
  'signed-out-everywhere': 'Signed out everywhere: every session of this sign-in ended.',
} satisfies Record<string, string | ((n: number) => string)>;
const ALERTS = {
  'no-payment': 'This merchant has no payment with that id.',
  'merchant-name': 'A merchant needs a name (up to 200 characters).',
} satisfies Record<string, string>;

export type NoticeCode = keyof typeof NOTICES;
export type AlertCode = keyof typeof ALERTS;

/** `path` with a notice to show, by code (and its count). */
export const withNotice = (path: string, code: NoticeCode, n?: number) => `${path}${queryString({ notice: code, n })}`;
export const withAlert = (path: string, code: AlertCode) => `${path}${queryString({ error: code })}`;

/** The notice or alert a page's query names (`notice`, `error`, `n`), or nothing. */
export function flash(q: Record<string, string | undefined>): Html {
  const n = /^\d{1,9}$/.test(q.n ?? '') ? Number(q.n) : undefined;
  const notice = q.notice && Object.hasOwn(NOTICES, q.notice) ? NOTICES[q.notice as NoticeCode] : undefined;
  const text = typeof notice === 'function' ? (n === undefined ? undefined : notice(n)) : notice;
  if (text) return html`<p class="flash" role="status">${text}</p>`;
  if (q.error && Object.hasOwn(ALERTS, q.error))
    return html`<p class="flash error" role="alert">${ALERTS[q.error as AlertCode]}</p>`;
  return html``;
}

/** A table: headers and rows of cells (each escaped unless Html). */
export function table(headers: string[], rows: Part[][], empty = 'Nothing here yet.'): Html {
  if (rows.length === 0) return html`<p class="empty">${empty}</p>`;
  // In a box of its own that scrolls sideways when the table is wider than the screen.
  return html`<div class="table"><table><thead><tr>${headers.map((h) => html`<th>${h}</th>`)}</tr></thead><tbody>${rows.map((r) => html`<tr>${r.map((c) => html`<td>${c}</td>`)}</tr>`)}</tbody></table></div>`;
}

/**
 * Previous/next links over a list paged like the API (page[offset], page[limit]); the total may
 * be capped ("10,000+"). With `cursors` (a console list's page: cappedPage), the links start
 * next to this page's first or last row (page[before], page[after]), so the next page costs its
 * own rows however deep it is; page[offset] still numbers the rows.
 */
export function pager(
  path: string,
  query: Record<string, string | undefined>,
  page: { limit: number; offset: number },
  total: number,
  capped = false,
  cursors?: { rows: number; next?: string; prev?: string },
): Html {
  const link = (offset: number | undefined, cursor: Record<string, string | undefined> = {}) =>
    `${path}${queryString({ ...query, ...cursor, 'page[offset]': offset, 'page[limit]': page.limit === 25 ? undefined : page.limit })}`;
  const prevOffset = Math.max(0, page.offset - page.limit);
  if (cursors) {
    // A page before which nothing comes is the first, whatever page[offset] said.
    const first = cursors.prev ? page.offset : 0;
    return html`<p class="pager">${cursors.rows === 0 ? 'None' : `${first + 1}–${first + cursors.rows} of ${total.toLocaleString('en-US')}${capped ? '+' : ''}`}
${cursors.prev ? html` <a rel="prev" href="${page.offset > 0 && prevOffset === 0 ? link(undefined) : link(prevOffset || undefined, { 'page[before]': cursors.prev })}">← Previous</a>` : ''}
${cursors.next ? html` <a rel="next" href="${link(first + page.limit, { 'page[after]': cursors.next })}">Next →</a>` : ''}</p>`;
  }
  const last = Math.min(page.offset + page.limit, total);
  return html`<p class="pager">${total === 0 ? 'None' : `${page.offset + 1}–${last} of ${total.toLocaleString('en-US')}${capped ? '+' : ''}`}
${page.offset > 0 ? html` <a rel="prev" href="${link(prevOffset)}">← Previous</a>` : ''}
${page.offset + page.limit < total ? html` <a rel="next" href="${link(page.offset + page.limit)}">Next →</a>` : ''}</p>`;
}

/** A filter form (GET) with selects and text inputs. */
export function filterForm(
  action: string,
  fields: { name: string; label: string; value?: string; options?: string[] }[],
): Html {
  return html`<form method="get" action="${action}" class="filters">${fields.map((f) =>
    f.options
      ? html`<label>${f.label} <select name="${f.name}"><option value="">any</option>${f.options.map((o) => html`<option${o === f.value ? trusted(' selected') : ''}>${o}</option>`)}</select></label>`
      : html`<label>${f.label} <input name="${f.name}" value="${f.value ?? ''}"></label>`,
  )}<button>Filter</button></form>`;
}

/** A POST button carrying the session's CSRF token. */
export function action(path: string, label: string, csrf: string, fields: Record<string, string> = {}, cls = ''): Html {
  return html`<form method="post" action="${path}" class="action ${cls}"><input type="hidden" name="_csrf" value="${csrf}">${Object.entries(fields).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}<button>${label}</button></form>`;
}

export function dl(items: [string, Part][]): Html {
  return html`<dl>${items.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>`;
}

export function json(value: unknown): Html {
  return html`<pre>${JSON.stringify(value, null, 2)}</pre>`;
}
