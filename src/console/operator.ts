// The operator's pages: system health, merchants (create, open, disable), their secrets
// (rotate: the new secret is shown once; delete) and settings. Behind an operator session only; a
// merchant's session gets 404 here.
import { sql } from 'drizzle-orm';
import type { AppContext } from '../context.ts';
import { rowsOf } from '../db/open.ts';
import { ApiError } from '../http/errors.ts';
import type { App } from '../http/server.ts';
import { createClient, removeClientSecret, rotateClientSecret, updateClient } from '../modules/clients/domain.ts';
import { resolveSettings } from '../modules/clients/settings.ts';
import { countClients, findClient, listClientRows, listSecretRows } from '../modules/clients/sql.ts';
import { isUuid, notFound, requireOperator } from './auth.ts';
import {
  action,
  badge,
  dl,
  flash,
  html,
  json,
  layout,
  pager,
  table,
  when,
  withAlert,
  withNotice,
  type Html,
} from './html.ts';
import type { SessionRow } from './session.ts';

export function operatorRoutes(app: App, ctx: AppContext): void {
  const shell = (title: string, session: SessionRow, body: Html, q: Record<string, string | undefined> = {}) =>
    layout(title, html`${flash(q)}${body}`, {
      nav: [{ href: '/operator', label: 'Operator', current: true }],
      who: 'operator',
      csrf: session.csrfToken,
      environment: ctx.config.environment,
    });

  app.get('/operator', async (req, reply) => {
    const session = requireOperator(req);
    const q = req.query as Record<string, string | undefined>;
    const offset = Math.max(0, Number.parseInt(q['page[offset]'] ?? '', 10) || 0);
    const page = { limit: 25, offset: Math.min(offset, 1_000_000) };
    const started = performance.now();
    const [{ rows, total }, merchants, pending] = await Promise.all([
      listClientRows(ctx.db, page),
      countClients(ctx.db),
      ctx.db
        .execute(sql`select count(*)::int as n from event_delivery_queue`)
        .then((r) => rowsOf<{ n: number }>(r)[0]?.n ?? 0),
    ]);
    const dbMs = performance.now() - started;
    const pendingDeliveries = pending;
    const l = ctx.config.listeners;
    const body = html`<h2>System health</h2><div class="cards">
<div class="card">Database<b>${ctx.database.kind === 'pglite' ? 'embedded (PGlite)' : 'PostgreSQL'}</b>answered in ${dbMs.toFixed(0)} ms</div>
<div class="card">Environment<b>${ctx.config.environment}</b>${ctx.config.workersEnabled ? 'background jobs on' : 'background jobs off (WORKERS=false)'}</div>
<div class="card">Merchants<b>${merchants}</b></div>
<div class="card">Webhook deliveries pending<b>${pendingDeliveries}</b></div>
<div class="card">Request log<b>${ctx.config.console.requestLog ? `${ctx.config.console.requestLogRetentionDays} days` : 'off'}</b>${ctx.requestLog.dropped} dropped</div>
<div class="card">Uptime<b>${Math.floor(process.uptime() / 60)} min</b>${process.version}</div></div>
${table(
  ['Listener', 'Address', 'In this process'],
  (['api', 'card', 'pay', 'admin', 'console'] as const).map((n) => [
    n,
    l[n].publicUrl,
    ctx.config.enabledListeners.includes(n) ? 'yes' : 'no',
  ]),
)}
<h2>Merchants</h2>${table(
      ['Merchant', 'Name', 'Status', 'Created', ''],
      rows.map((c) => [
        html`<a class="id" href="/operator/merchants/${c.id}">${c.id}</a>`,
        c.name,
        badge(c.disabled ? 'disabled' : 'enabled'),
        when(c.createdAt),
        html`<a href="/m/${c.id}">open console</a>`,
      ]),
    )}${pager('/operator', {}, page, total)}
<h2>New merchant</h2><form method="post" action="/operator/merchants" class="filters"><input type="hidden" name="_csrf" value="${session.csrfToken}"><label>Name <input name="name" required maxlength="200"></label><button>Create</button></form>`;
    return reply.type('text/html; charset=utf-8').send(shell('Operator', session, body, q));
  });

  app.post('/operator/merchants', async (req, reply) => {
    const session = requireOperator(req);
    const name = String((req.body as Record<string, unknown>).name ?? '').trim();
    if (name.length === 0 || name.length > 200) return reply.redirect(withAlert('/operator', 'merchant-name'), 303);
    const { client, secret } = await createClient(ctx.db, {
      name,
      environment: ctx.config.environment,
      now: ctx.clock.now(),
    });
    return reply
      .type('text/html; charset=utf-8')
      .code(201)
      .send(shell(`Merchant ${client.name} created`, session, secretShown(client.id, secret.secret)));
  });

  const secretShown = (clientId: string, secret: string) =>
    html`<p class="flash" role="status">Copy the secret now: it is shown this once and stored only as a hash.</p>${dl([
      ['Client-ID', html`<code>${clientId}</code>`],
      ['Secret', html`<code>${secret}</code>`],
    ])}<p><a href="/operator/merchants/${clientId}">Back to the merchant</a></p>`;

  app.get('/operator/merchants/:clientId', async (req, reply) => {
    const session = requireOperator(req);
    const id = (req.params as { clientId: string }).clientId;
    if (!isUuid(id)) throw notFound();
    const client = await findClient(ctx.db, id);
    if (!client) throw notFound();
    const secrets = await listSecretRows(ctx.db, [client.id]);
    const t = session.csrfToken;
    const body = html`${dl([
      ['Client-ID', html`<code>${client.id}</code>`],
      ['Name', client.name],
      ['Status', badge(client.disabled ? 'disabled' : 'enabled')],
      ['Created', when(client.createdAt)],
      ['Console', html`<a href="/m/${client.id}">open the merchant's pages</a>`],
    ])}${action(`/operator/merchants/${client.id}/${client.disabled ? 'enable' : 'disable'}`, client.disabled ? 'Enable' : 'Disable', t, {}, 'quiet')}
<h2>Secrets</h2>${table(
      ['Secret', 'Ends with', 'Created', ''],
      secrets.map((s) => [
        html`<span class="id">${s.id}</span>`,
        `…${s.hint}`,
        when(s.createdAt),
        action(`/operator/merchants/${client.id}/secrets/${s.id}/delete`, 'Delete', t, {}, 'quiet'),
      ]),
    )}${action(`/operator/merchants/${client.id}/rotate-secret`, 'Add a secret (rotation)', t)}
<h2>Settings in effect</h2>${json(resolveSettings(client.settings as Record<string, unknown>))}`;
    return reply
      .type('text/html; charset=utf-8')
      .send(shell(client.name, session, body, req.query as Record<string, string | undefined>));
  });

  app.post('/operator/merchants/:clientId/rotate-secret', async (req, reply) => {
    const session = requireOperator(req);
    const id = (req.params as { clientId: string }).clientId;
    if (!isUuid(id)) throw notFound();
    try {
      const secret = await rotateClientSecret(ctx.db, {
        clientId: id,
        environment: ctx.config.environment,
        now: ctx.clock.now(),
      });
      ctx.auth.invalidate(id);
      return reply.type('text/html; charset=utf-8').send(shell('New secret', session, secretShown(id, secret.secret)));
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) throw notFound();
      throw err;
    }
  });

  for (const [verb, disabled] of [
    ['disable', true],
    ['enable', false],
  ] as const) {
    app.post(`/operator/merchants/:clientId/${verb}`, async (req, reply) => {
      requireOperator(req);
      const id = (req.params as { clientId: string }).clientId;
      if (!isUuid(id)) throw notFound();
      try {
        await updateClient(ctx.db, { id, disabled, now: ctx.clock.now() });
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) throw notFound();
        throw err;
      }
      ctx.auth.invalidate(id);
      return reply.redirect(
        withNotice(`/operator/merchants/${id}`, disabled ? 'merchant-disabled' : 'merchant-enabled'),
        303,
      );
    });
  }

  // Rotation's second half: API calls with the secret are refused, and the console sessions
  // signed in with it end with its row.
  app.post('/operator/merchants/:clientId/secrets/:secretId/delete', async (req, reply) => {
    requireOperator(req);
    const { clientId, secretId } = req.params as { clientId: string; secretId: string };
    if (!isUuid(clientId) || !isUuid(secretId)) throw notFound();
    try {
      await removeClientSecret(ctx.db, { clientId, secretId });
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) throw notFound();
      throw err;
    }
    ctx.auth.invalidate(clientId);
    return reply.redirect(withNotice(`/operator/merchants/${clientId}`, 'secret-deleted'), 303);
  });
}
