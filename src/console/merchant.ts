// A merchant's pages (/m/:clientId/...): the operator sees any merchant, a merchant's developer
// only its own (another merchant's id, or any of its resources' ids, is 404). Reads go through
// the modules' own queries, scoped by client; actions through their domain functions.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import type { CappedPage, Cursor } from '../db/paged.ts';
import { ApiError } from '../http/errors.ts';
import { MAX_PAGE_LIMIT, MAX_PAGE_OFFSET, type Page } from '../http/paging.ts';
import type { App } from '../http/server.ts';
import { postingsOfOwner, postingsOfRefs } from '../ledger/history.ts';
import { balancesOf, WALLET_CODES } from '../ledger/accounts.ts';
import type { ClientRow } from '../modules/clients/sql.ts';
import { resolveSettings } from '../modules/clients/settings.ts';
import { replayEvent } from '../modules/events/domain.ts';
import { deliveriesOf, findEvent, listEventRows, type EventRow } from '../modules/events/sql.ts';
import { TOPICS } from '../modules/events/topics.ts';
import { simulateKycDecision } from '../modules/kyc/domain.ts';
import { latestApplication } from '../modules/kyc/sql.ts';
import { INTENT_STATUSES } from '../modules/payment-intents/schemas.ts';
import { findIntent, listIntentRows, type IntentRow } from '../modules/payment-intents/sql.ts';
import { failBankPull, networkAuthorizeCapture, settlePaymentNow } from '../modules/payments/domain.ts';
import {
  attemptsOfPayment,
  dailyPaymentStats,
  findPayment,
  listPaymentRows,
  paymentIdsOfIntent,
  type PaymentRow,
} from '../modules/payments/sql.ts';
import { renderContext } from '../modules/payments/render.ts';
import { findRequestRow, listRequestRows } from '../modules/request-log/sql.ts';
import { clearPendingDeposits } from '../modules/transactions/domain.ts';
import { listTransactionRows } from '../modules/transactions/sql.ts';
import { consoleUserRows, findUser } from '../modules/users/sql.ts';
import { consoleWalletRows, findWallet, findWalletOfUser } from '../modules/wallets/sql.ts';
import { listWebhookRows } from '../modules/webhooks/sql.ts';
import { listWithdrawalRows } from '../modules/withdrawals/sql.ts';
import { isUuid, merchantOf, notFound } from './auth.ts';
import { barChart, rateChart } from './charts.ts';
import {
  action,
  badge,
  dl,
  filterForm,
  flash,
  html,
  json,
  layout,
  money,
  pager,
  table,
  when,
  withAlert,
  withNotice,
  type Html,
  type NoticeCode,
} from './html.ts';
import type { SessionRow } from './session.ts';

/** Totals of the big lists are counted up to this ("10,000+"), so a page costs only its rows. */
const TOTAL_CAP = 10_000;
const CONSOLE_PAGE = 25;
const CHART_DAYS = 30;

type Q = Record<string, string | undefined>;

function pageOf(q: Q): Page {
  const limit = Math.min(Math.max(1, Number.parseInt(q['page[limit]'] ?? '', 10) || CONSOLE_PAGE), MAX_PAGE_LIMIT);
  const offset = Math.min(Math.max(0, Number.parseInt(q['page[offset]'] ?? '', 10) || 0), MAX_PAGE_OFFSET);
  return { limit, offset };
}

/** The page's cursor (the pager's links: page[after], page[before]); a value that is not an id is none. */
function cursorOf(q: Q): Cursor | undefined {
  const before = q['page[before]'];
  const after = q['page[after]'];
  if (isUuid(before)) return { before };
  if (isUuid(after)) return { after };
  return undefined;
}

/** What a list page passes to its query: a capped total and the cursor. */
const listing = (q: Q) => ({ totalCap: TOTAL_CAP, cursor: cursorOf(q) });
/** The pager's part of a capped page. */
const around = (r: CappedPage<unknown>) => ({ rows: r.rows.length, next: r.next, prev: r.prev });

/** A filter value from the query (trimmed; empty is none; bounded). */
const f = (q: Q, name: string) => {
  const v = q[name]?.trim();
  return v ? v.slice(0, 200) : undefined;
};
const oneOf = <T extends string>(v: string | undefined, allowed: readonly T[]) =>
  v && (allowed as readonly string[]).includes(v) ? (v as T) : undefined;

const PAYMENT_STATUSES = ['Created', 'Processing', 'Sent', 'Failed', 'Canceled', 'Returned'] as const;
const PAYMENT_METHODS = ['Wallet', 'Gift'] as const;
const DELIVERY_STATES = ['pending', 'succeeded', 'failed', 'none'] as const;

interface View {
  ctx: AppContext;
  req: FastifyRequest;
  reply: FastifyReply;
  session: SessionRow;
  client: ClientRow;
  base: string;
  q: Q;
}

export function merchantRoutes(app: App, ctx: AppContext): void {
  const rc = renderContext(ctx);
  const sandbox = ctx.config.environment === 'sandbox';

  const page = (path: string, render: (v: View) => Promise<Html | string>) => {
    app.get(`/m/:clientId${path}`, async (req, reply) => {
      const { session, client } = await merchantOf(ctx, req);
      const v: View = { ctx, req, reply, session, client, base: `/m/${client.id}`, q: req.query as Q };
      const out = await render(v);
      if (typeof out === 'string') return reply.redirect(out, 303);
      return reply.type('text/html; charset=utf-8').send(shell(v, out));
    });
  };

  /**
   * An action: runs, then goes back to `back` with its notice. A refusal is answered with its
   * status and detail on the page itself, never through the address (flash in html.ts).
   */
  const act = (
    path: string,
    run: (v: View, body: Record<string, string>) => Promise<{ back: string; notice: NoticeCode; n?: number }>,
  ) => {
    app.post(`/m/:clientId${path}`, async (req, reply) => {
      const { session, client } = await merchantOf(ctx, req);
      const v: View = { ctx, req, reply, session, client, base: `/m/${client.id}`, q: {} };
      const body = (req.body ?? {}) as Record<string, string>;
      const fallback = `${v.base}${path.replace(/\/[a-z-]+$/, '').replace(/:(\w+)/g, (_m, k: string) => encodeURIComponent((req.params as Record<string, string>)[k] ?? ''))}`;
      try {
        const { back, notice, n } = await run(v, body);
        return reply.redirect(withNotice(back, notice, n), 303);
      } catch (err) {
        if (err instanceof ApiError)
          return reply
            .code(err.status)
            .type('text/html; charset=utf-8')
            .send(
              shell(
                v,
                html`<p class="flash error" role="alert">${err.items[0]?.detail ?? err.message}</p><p><a href="${fallback}">Back</a></p>`,
              ),
            );
        throw err;
      }
    });
  };

  const title = (_v: View, t: string) => html`${t}`;
  const shell = (v: View, body: Html) => {
    const path = v.req.url.split('?')[0]!;
    const sections: [string, string][] = [
      ['', 'Overview'],
      ['/users', 'Users'],
      ['/wallets', 'Wallets'],
      ['/intents', 'Payment intents'],
      ['/payments', 'Payments'],
      ['/events', 'Events'],
      ['/webhooks', 'Webhooks'],
      ['/requests', 'Requests'],
    ];
    const nav = [
      ...(v.session.role === 'operator' ? [{ href: '/operator', label: '← Operator' }] : []),
      ...sections.map(([p, label]) => ({
        href: `${v.base}${p}`,
        label,
        current: p === '' ? path === v.base : path.startsWith(`${v.base}${p}`),
      })),
    ];
    const notice = flash(v.q);
    const heading = (body as Html & { title?: string }).title ?? v.client.name;
    return layout(heading, html`${notice}${body}`, {
      nav,
      who: v.session.role === 'operator' ? `operator · ${v.client.name}` : v.client.name,
      csrf: v.session.csrfToken,
      environment: ctx.config.environment,
    });
  };
  const titled = (t: string, body: Html): Html => Object.assign(body, { title: t });
  void title;

  // ----- overview: charts of volume and success rate -----------------------------------------
  page('', async (v) => {
    // From the hourly rollup of the merchant's payments (dailyPaymentStats): exact, and the
    // same few hundred rows to read whether the merchant has a hundred payments or millions.
    const now = ctx.clock.now();
    const since = new Date(
      Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - (CHART_DAYS - 1) * 86_400_000,
    );
    const stats = new Map((await dailyPaymentStats(ctx.db, v.client.id, since)).map((s) => [s.day, s]));
    const days = Array.from({ length: CHART_DAYS }, (_, i) =>
      new Date(since.getTime() + i * 86_400_000).toISOString().slice(0, 10),
    );
    const totals = { count: 0, failed: 0, captured: 0, refunded: 0 };
    for (const s of stats.values()) {
      totals.count += s.count;
      totals.failed += s.failed;
      totals.captured += s.captured;
      totals.refunded += s.refunded;
    }
    const charts = html`<div class="cards"><div class="card">Payments, ${CHART_DAYS} days<b data-figure="payments">${totals.count.toLocaleString('en-US')}</b></div>
<div class="card">Captured<b data-figure="captured">${money(totals.captured)}</b></div>
<div class="card">Refunded<b data-figure="refunded">${money(totals.refunded)}</b></div>
<div class="card">Success rate<b data-figure="success-rate">${totals.count ? `${(((totals.count - totals.failed) / totals.count) * 100).toFixed(1)}%` : '—'}</b></div></div>
${barChart(
  'Captured volume per day (UTC)',
  days.map((d) => ({ label: d.slice(5), value: stats.get(d)?.captured ?? 0 })),
  money,
)}
${barChart(
  'Payments per day',
  days.map((d) => ({ label: d.slice(5), value: stats.get(d)?.count ?? 0 })),
  (n) => n.toLocaleString('en-US'),
)}
${rateChart(
  'Success rate per day (payments not Failed)',
  days.map((d) => {
    const s = stats.get(d);
    return { label: d.slice(5), value: s && s.count > 0 ? (s.count - s.failed) / s.count : null };
  }),
)}`;
    return titled(
      v.client.name,
      html`${dl([
        ['Client-ID', html`<code>${v.client.id}</code>`],
        ['Environment', ctx.config.environment],
        ['API', `${ctx.config.listeners.api.publicUrl}/api/v1`],
      ])}<h2>Activity</h2>${charts}`,
    );
  });

  // ----- users and KYC -----------------------------------------------------------------------
  page('/users', async (v) => {
    const p = pageOf(v.q);
    const filters = { email: f(v.q, 'email'), phoneNumber: f(v.q, 'phoneNumber'), referenceId: f(v.q, 'referenceId') };
    const r = await consoleUserRows(ctx.db, v.client.id, filters, p, listing(v.q));
    return titled(
      'Users',
      html`${filterForm(`${v.base}/users`, [
        { name: 'email', label: 'E-mail', value: filters.email },
        { name: 'phoneNumber', label: 'Phone', value: filters.phoneNumber },
        { name: 'referenceId', label: 'Reference', value: filters.referenceId },
      ])}${table(
        ['User', 'Name', 'E-mail', 'Phone', 'KYC', 'Created'],
        r.rows.map((u) => [
          html`<a class="id" href="${v.base}/users/${u.id}">${u.id}</a>`,
          [u.firstName, u.lastName].filter(Boolean).join(' '),
          u.email,
          u.phoneNumber,
          badge(u.kycStatus),
          when(u.createdAt),
        ]),
      )}${pager(`${v.base}/users`, { ...filters }, p, r.total, r.capped, around(r))}`,
    );
  });

  page('/users/:userId', async (v) => {
    const userId = (v.req.params as { userId: string }).userId;
    if (!isUuid(userId)) throw notFound();
    const user = await findUser(ctx.db, v.client.id, userId);
    if (!user) throw notFound();
    const [application, wallet] = await Promise.all([
      latestApplication(ctx.db, v.client.id, user.id),
      findWalletOfUser(ctx.db, v.client.id, user.id),
    ]);
    return titled(
      `User ${[user.firstName, user.lastName].filter(Boolean).join(' ') || user.id}`,
      html`${dl([
        ['Id', html`<code>${user.id}</code>`],
        ['E-mail', user.email],
        ['Phone', user.phoneNumber],
        ['Reference', user.referenceId],
        ['KYC', badge(user.kycStatus)],
        ['Disabled', user.disabled ? 'yes' : 'no'],
        ['Wallet', wallet ? html`<a class="id" href="${v.base}/wallets/${wallet.id}">${wallet.id}</a>` : 'none'],
        ['Created', when(user.createdAt)],
      ])}<h2>Latest KYC application</h2>${
        application
          ? dl([
              ['Application', html`<code>${application.id}</code>`],
              ['Status', badge(application.status)],
              ['Applicant', `${application.firstName} ${application.lastName}`],
              ['E-mail', application.email],
              ['Submitted', when(application.createdAt)],
              ['Sent to provider', when(application.sentAt)],
              ['Decided', when(application.decidedAt)],
              ['Documents submitted', when(application.documentsSubmittedAt)],
            ])
          : html`<p class="empty">No application.</p>`
      }${
        sandbox && application && ['Pending', 'ManualReview', 'AwaitingDocuments'].includes(application.status)
          ? html`<h2>Sandbox simulations</h2>${action(`${v.base}/users/${user.id}/kyc-decision`, 'Approve KYC', v.session.csrfToken, { status: 'Approved' })}${action(`${v.base}/users/${user.id}/kyc-decision`, 'Decline KYC', v.session.csrfToken, { status: 'Declined' }, 'quiet')}`
          : ''
      }`,
    );
  });

  act('/users/:userId/kyc-decision', async (v, body) => {
    if (!sandbox) throw notFound();
    const userId = (v.req.params as { userId: string }).userId;
    if (!isUuid(userId) || !(await findUser(ctx.db, v.client.id, userId))) throw notFound();
    const status = body.status === 'Declined' ? 'Declined' : 'Approved';
    await simulateKycDecision(ctx.db, {
      clientId: v.client.id,
      userId,
      status,
      now: ctx.clock.now(),
      baseUrl: rc.baseUrl,
    });
    return { back: `${v.base}/users/${userId}`, notice: status === 'Declined' ? 'kyc-declined' : 'kyc-approved' };
  });

  // ----- wallets, balances and the ledger behind them; deposits and withdrawals ---------------
  page('/wallets', async (v) => {
    const p = pageOf(v.q);
    const filters = { email: f(v.q, 'email'), phoneNumber: f(v.q, 'phoneNumber'), referenceId: f(v.q, 'referenceId') };
    const r = await consoleWalletRows(ctx.db, v.client.id, filters, p, listing(v.q));
    const balances = await balancesOf(
      ctx.db,
      'wallet',
      r.rows.map((w) => w.id),
    );
    const sum = (b: Record<string, number> | undefined, suffix: string) =>
      WALLET_CODES.filter((c) => c.endsWith(suffix)).reduce((a, c) => a + (b?.[c] ?? 0), 0);
    return titled(
      'Wallets',
      html`${filterForm(`${v.base}/wallets`, [
        { name: 'email', label: "User's e-mail", value: filters.email },
        { name: 'phoneNumber', label: "User's phone", value: filters.phoneNumber },
        { name: 'referenceId', label: "User's reference", value: filters.referenceId },
      ])}${table(
        ['Wallet', 'User', 'Status', 'Available', 'Pending', 'Reserved', 'Created'],
        r.rows.map((w) => {
          const b = balances.get(w.id);
          return [
            html`<a class="id" href="${v.base}/wallets/${w.id}">${w.id}</a>`,
            html`<a class="id" href="${v.base}/users/${w.userId}">${w.userId}</a>`,
            badge(w.status),
            money(sum(b, '.available')),
            money(sum(b, '.pending')),
            money(sum(b, '.reserved')),
            when(w.createdAt),
          ];
        }),
      )}${pager(`${v.base}/wallets`, { ...filters }, p, r.total, r.capped, around(r))}`,
    );
  });

  page('/wallets/:walletId', async (v) => {
    const walletId = (v.req.params as { walletId: string }).walletId;
    if (!isUuid(walletId)) throw notFound();
    const wallet = await findWallet(ctx.db, v.client.id, walletId);
    if (!wallet) throw notFound();
    const small = { limit: 10, offset: 0 };
    const ledgerPage = pageOf(v.q);
    const [balances, deposits, withdrawals, postings] = await Promise.all([
      balancesOf(ctx.db, 'wallet', [wallet.id]),
      listTransactionRows(ctx.db, v.client.id, wallet.id, small),
      listWithdrawalRows(ctx.db, v.client.id, wallet.id, small),
      postingsOfOwner(ctx.db, {
        clientId: v.client.id,
        ownerType: 'wallet',
        ownerId: wallet.id,
        page: ledgerPage,
        totalCap: TOTAL_CAP,
      }),
    ]);
    const b = balances.get(wallet.id) ?? {};
    const sims = sandbox
      ? html`<h2>Sandbox simulations</h2>${action(`${v.base}/wallets/${wallet.id}/clear-deposits`, 'Clear pending bank deposits', v.session.csrfToken, { type: 'bank' })}${action(`${v.base}/wallets/${wallet.id}/clear-deposits`, 'Clear pending card deposits', v.session.csrfToken, { type: 'card' }, 'quiet')}`
      : '';
    return titled(
      'Wallet',
      html`${dl([
        ['Id', html`<code>${wallet.id}</code>`],
        ['User', html`<a class="id" href="${v.base}/users/${wallet.userId}">${wallet.userId}</a>`],
        ['Status', badge(wallet.status)],
        ['Created', when(wallet.createdAt)],
      ])}${sims}<h2>Balances</h2>${table(
        ['Account', 'Balance'],
        WALLET_CODES.map((c) => [c, money(b[c] ?? 0)]),
      )}<h2>Deposits</h2>${table(
        ['Deposit', 'Status', 'Amount', 'Credited', 'Fee', 'Created', 'Cleared / failed', 'Reason'],
        deposits.rows.map((t) => [
          html`<span class="id">${t.id}</span>`,
          badge(t.status),
          money(t.amount),
          money(t.walletAmount),
          money(t.feeAmount),
          when(t.createdAt),
          when(t.clearedAt ?? t.failedAt),
          t.failureReason,
        ]),
      )}${deposits.total > deposits.rows.length ? html`<p class="pager">Latest ${deposits.rows.length} of ${deposits.total}.</p>` : ''}<h2>Withdrawals</h2>${table(
        ['Withdrawal', 'Amount', 'To', 'Created'],
        withdrawals.rows.map((w) => [
          html`<span class="id">${w.id}</span>`,
          money(w.amount),
          w.split.map((s) => `${s.institutionName} ••${s.accountMask}: ${money(s.amount)}`).join('; '),
          when(w.createdAt),
        ]),
      )}<h2>Ledger entries</h2>${table(
        ['When', 'Entry', 'What', 'For', 'Account', 'Amount'],
        postings.rows.map((r) => [
          when(r.createdAt),
          html`<span class="id">${r.entryId}</span>`,
          r.kind,
          r.refType === 'payment'
            ? html`<a class="id" href="${v.base}/payments/${r.refId}">payment ${r.refId}</a>`
            : `${r.refType} ${r.refId}`,
          r.code,
          money(r.amount),
        ]),
      )}${pager(`${v.base}/wallets/${wallet.id}`, {}, ledgerPage, postings.total, postings.capped)}`,
    );
  });

  act('/wallets/:walletId/clear-deposits', async (v, body) => {
    if (!sandbox) throw notFound();
    const walletId = (v.req.params as { walletId: string }).walletId;
    if (!isUuid(walletId) || !(await findWallet(ctx.db, v.client.id, walletId))) throw notFound();
    const funding = body.type === 'card' ? 'card' : 'bank';
    const n = await clearPendingDeposits(ctx.db, {
      clientId: v.client.id,
      walletId,
      funding,
      settings: resolveSettings(v.client.settings as Record<string, unknown>),
      baseUrl: rc.baseUrl,
      now: ctx.clock.now(),
    });
    return {
      back: `${v.base}/wallets/${walletId}`,
      notice: funding === 'card' ? 'card-deposits-cleared' : 'bank-deposits-cleared',
      n,
    };
  });

  // ----- payment intents ---------------------------------------------------------------------
  page('/intents', async (v) => {
    const p = pageOf(v.q);
    const filters = {
      status: oneOf(f(v.q, 'status'), INTENT_STATUSES),
      paymentMethod: oneOf(f(v.q, 'paymentMethod'), PAYMENT_METHODS),
    };
    const r = (await listIntentRows(
      ctx.db,
      v.client.id,
      filters,
      [{ field: 'createdAt', descending: true }],
      p,
      ctx.clock.now(),
      listing(v.q),
    )) as CappedPage<IntentRow>;
    return titled(
      'Payment intents',
      html`${filterForm(`${v.base}/intents`, [
        { name: 'status', label: 'Status', value: filters.status, options: [...INTENT_STATUSES] },
        { name: 'paymentMethod', label: 'Payment method', value: filters.paymentMethod, options: [...PAYMENT_METHODS] },
      ])}${table(
        ['Intent', 'Status', 'Amount', 'Method', 'Reference', 'Created'],
        r.rows.map((i) => [
          html`<a class="id" href="${v.base}/intents/${i.id}">${i.id}</a>`,
          badge(i.status),
          money(i.amount),
          i.paymentMethod,
          i.reference,
          when(i.createdAt),
        ]),
      )}${pager(`${v.base}/intents`, { status: filters.status, paymentMethod: filters.paymentMethod }, p, r.total, r.capped, around(r))}`,
    );
  });

  page('/intents/:intentId', async (v) => {
    const intentId = (v.req.params as { intentId: string }).intentId;
    if (!isUuid(intentId)) throw notFound();
    const intent = await findIntent(ctx.db, v.client.id, intentId);
    if (!intent) throw notFound();
    const paymentIds = await paymentIdsOfIntent(ctx.db, intent.id);
    return titled(
      'Payment intent',
      html`${dl([
        ['Id', html`<code>${intent.id}</code>`],
        ['Status', badge(intent.status)],
        ['Amount', money(intent.amount)],
        ['Method', intent.paymentMethod],
        ['Initiator', intent.initiator],
        ['Reference', intent.reference],
        [
          'Wallet',
          intent.walletId ? html`<a class="id" href="${v.base}/wallets/${intent.walletId}">${intent.walletId}</a>` : '',
        ],
        ['Payments', paymentIds.map((id) => html`<a class="id" href="${v.base}/payments/${id}">${id}</a> `)],
        ['Expires', when(intent.expiresAt)],
        ['Created', when(intent.createdAt)],
        ['Updated', when(intent.updatedAt)],
      ])}`,
    );
  });

  // ----- payments: list, find by id, timeline, simulations ------------------------------------
  page('/payments', async (v) => {
    const id = f(v.q, 'id');
    if (id) {
      // Find a payment by its id: straight to it (404 when it is not this merchant's).
      if (isUuid(id) && (await findPayment(ctx.db, v.client.id, id))) return `${v.base}/payments/${id}`;
      return withAlert(`${v.base}/payments`, 'no-payment');
    }
    const p = pageOf(v.q);
    const filters = {
      status: oneOf(f(v.q, 'status'), PAYMENT_STATUSES),
      reference: f(v.q, 'reference'),
      channel: f(v.q, 'channel'),
    };
    const r = (await listPaymentRows(
      ctx.db,
      v.client.id,
      filters,
      [{ field: 'createdAt', descending: true }],
      p,
      listing(v.q),
    )) as CappedPage<PaymentRow>;
    return titled(
      'Payments',
      html`${filterForm(`${v.base}/payments`, [
        { name: 'id', label: 'Payment id' },
        { name: 'status', label: 'Status', value: filters.status, options: [...PAYMENT_STATUSES] },
        { name: 'reference', label: 'Reference', value: filters.reference },
        { name: 'channel', label: 'Channel', value: filters.channel },
      ])}${table(
        ['Payment', 'Status', 'Amount', 'Captured', 'Rail', 'Reference', 'Created'],
        r.rows.map((x) => [
          html`<a class="id" href="${v.base}/payments/${x.id}">${x.id}</a>`,
          badge(x.status),
          money(x.amount),
          money(x.capturedAmount),
          x.rail,
          x.reference,
          when(x.createdAt),
        ]),
      )}${pager(`${v.base}/payments`, { ...filters }, p, r.total, r.capped, around(r))}`,
    );
  });

  page('/payments/:paymentId', async (v) => {
    const paymentId = (v.req.params as { paymentId: string }).paymentId;
    if (!isUuid(paymentId)) throw notFound();
    const payment = await findPayment(ctx.db, v.client.id, paymentId);
    if (!payment) throw notFound();
    const attempts = await attemptsOfPayment(ctx.db, v.client.id, payment);
    const postings = await postingsOfRefs(ctx.db, {
      clientId: v.client.id,
      refs: [{ refType: 'payment', refId: payment.id }, ...attempts.map((a) => ({ refType: 'attempt', refId: a.id }))],
    });
    const steps: [Date, string][] = [
      ...attempts.map((a): [Date, string] => [
        a.createdAt,
        `Authorization attempt ${a.id}: ${a.state}${a.idempotencyKey ? ` (idempotency key ${a.idempotencyKey})` : ''}`,
      ]),
      [payment.createdAt, `Created (authorized ${money(payment.amount)})`],
    ];
    if (payment.capturedAt) steps.push([payment.capturedAt, `Captured ${money(payment.capturedAmount)}`]);
    if (payment.settledAt) steps.push([payment.settledAt, `Settled: ${payment.status}`]);
    if (payment.canceledAt) steps.push([payment.canceledAt, 'Canceled']);
    const entries = new Map<string, { at: Date; kind: string }>();
    for (const r of postings) if (!entries.has(r.entryId)) entries.set(r.entryId, { at: r.createdAt, kind: r.kind });
    for (const e of entries.values()) steps.push([e.at, `Ledger: ${e.kind}`]);
    if (payment.failureReason) steps.push([payment.updatedAt, `Failed: ${payment.failureReason}`]);
    steps.sort((a, b) => a[0].getTime() - b[0].getTime());
    const t = v.session.csrfToken;
    const base = `${v.base}/payments/${payment.id}`;
    const sims = sandbox
      ? html`<h2>Sandbox simulations</h2>${payment.status === 'Created' && payment.rail !== 'bank' ? action(`${base}/card`, 'Card network: authorize and capture', t) : ''}${payment.status === 'Processing' ? html`${action(`${base}/settle`, 'Settle now', t)}${action(`${base}/fail-bank-pull`, 'Fail the bank pull', t, {}, 'quiet')}` : ''}${payment.status !== 'Created' && payment.status !== 'Processing' ? html`<p class="empty">No simulation applies to a ${payment.status} payment.</p>` : ''}`
      : '';
    return titled(
      'Payment',
      html`${dl([
        ['Id', html`<code>${payment.id}</code>`],
        ['Status', badge(payment.status)],
        ['Amount', money(payment.amount)],
        ['Captured', money(payment.capturedAmount)],
        ['Refunded', money(payment.refundedAmount)],
        ['Rail', payment.rail],
        ['Channel', payment.channel],
        ['Reference', payment.reference],
        [
          'Intent',
          payment.intentId
            ? html`<a class="id" href="${v.base}/intents/${payment.intentId}">${payment.intentId}</a>`
            : '',
        ],
        [
          'Wallet',
          payment.walletId
            ? html`<a class="id" href="${v.base}/wallets/${payment.walletId}">${payment.walletId}</a>`
            : '',
        ],
        ['Expires', when(payment.expiresAt)],
      ])}${sims}<h2>Timeline</h2><ol class="timeline">${steps.map(([at, what]) => html`<li>${when(at)} — ${what}</li>`)}</ol>
<h2>Ledger postings</h2>${table(
        ['When', 'What', 'Owner', 'Account', 'Amount'],
        postings.map((r) => [
          when(r.createdAt),
          r.kind,
          r.ownerType === 'wallet' ? html`<a href="${v.base}/wallets/${r.ownerId}">wallet</a>` : r.ownerType,
          r.code,
          money(r.amount),
        ]),
      )}`,
    );
  });

  const paymentAct = (
    name: string,
    run: (paymentId: string, now: Date, clientId: string) => Promise<unknown>,
    notice: NoticeCode,
  ) =>
    act(`/payments/:paymentId/${name}`, async (v) => {
      if (!sandbox) throw notFound();
      const paymentId = (v.req.params as { paymentId: string }).paymentId;
      if (!isUuid(paymentId) || !(await findPayment(ctx.db, v.client.id, paymentId))) throw notFound();
      await run(paymentId, ctx.clock.now(), v.client.id);
      return { back: `${v.base}/payments/${paymentId}`, notice };
    });
  paymentAct(
    'card',
    (paymentId, now, clientId) => networkAuthorizeCapture(ctx.db, { clientId, paymentId, rc, now }),
    'card-captured',
  );
  paymentAct(
    'settle',
    (paymentId, now, clientId) => settlePaymentNow(ctx.db, { clientId, paymentId, rc, now }),
    'payment-settled',
  );
  paymentAct(
    'fail-bank-pull',
    (paymentId, now, clientId) =>
      failBankPull(ctx.db, { clientId, paymentId, rc, now, reason: 'Simulated from the console' }),
    'bank-pull-failed',
  );

  // ----- events, deliveries and replays ------------------------------------------------------
  page('/events', async (v) => {
    const p = pageOf(v.q);
    const filters = {
      topic: oneOf(f(v.q, 'topic'), TOPICS),
      deliveryState: oneOf(f(v.q, 'deliveryState'), DELIVERY_STATES),
    };
    const r = (await listEventRows(ctx.db, v.client.id, filters, p, listing(v.q))) as CappedPage<
      EventRow & { deliveryState: string }
    >;
    return titled(
      'Events',
      html`${filterForm(`${v.base}/events`, [
        { name: 'topic', label: 'Topic', value: filters.topic, options: [...TOPICS] },
        { name: 'deliveryState', label: 'Delivery', value: filters.deliveryState, options: [...DELIVERY_STATES] },
      ])}${table(
        ['Event', 'Topic', 'Resource', 'Delivery', 'Created'],
        r.rows.map((e) => [
          html`<a class="id" href="${v.base}/events/${e.id}">${e.id}</a>`,
          e.topic,
          `${e.resourceType} ${e.resourceId}`,
          badge(e.deliveryState),
          when(e.createdAt),
        ]),
      )}${pager(`${v.base}/events`, { ...filters }, p, r.total, r.capped, around(r))}`,
    );
  });

  page('/events/:eventId', async (v) => {
    const eventId = (v.req.params as { eventId: string }).eventId;
    if (!isUuid(eventId)) throw notFound();
    const event = await findEvent(ctx.db, v.client.id, eventId);
    if (!event) throw notFound();
    const { deliveries, attempts } = await deliveriesOf(ctx.db, event.id);
    let body: unknown = event.body;
    try {
      body = JSON.parse(event.body);
    } catch {
      /* shown as stored */
    }
    return titled(
      `Event ${event.topic}`,
      html`${dl([
        ['Id', html`<code>${event.id}</code>`],
        ['Topic', event.topic],
        ['Resource', `${event.resourceType} ${event.resourceId}`],
        ['Delivery', badge(event.deliveryState)],
        ['Created', when(event.createdAt)],
      ])}${action(`${v.base}/events/${event.id}/replay`, 'Replay to subscribed webhooks', v.session.csrfToken)}
<h2>Deliveries</h2>${table(
        ['Delivery', 'Webhook', 'Trigger', 'State', 'Attempts', 'Last status', 'Next attempt', 'Completed'],
        deliveries.map((d) => [
          html`<span class="id">${d.id}</span>`,
          html`<span class="id">${d.webhookId}</span>`,
          d.trigger,
          badge(d.state),
          d.attemptCount,
          d.lastStatusCode ?? d.lastError,
          d.state === 'pending' ? when(d.nextAttemptAt) : '',
          when(d.completedAt),
        ]),
        'Not sent to any webhook.',
      )}<h2>Attempts</h2>${table(
        ['Delivery', 'Attempt', 'Started', 'Duration', 'Status', 'Error', 'Response'],
        attempts.map((a) => [
          html`<span class="id">${a.deliveryId}</span>`,
          a.attempt,
          when(a.startedAt),
          `${a.durationMs} ms`,
          a.statusCode,
          a.error,
          a.responseExcerpt,
        ]),
        'No attempt yet.',
      )}<h2>Body</h2>${json(body)}`,
    );
  });

  act('/events/:eventId/replay', async (v) => {
    const eventId = (v.req.params as { eventId: string }).eventId;
    if (!isUuid(eventId)) throw notFound();
    const { deliveries } = await replayEvent(ctx.db, { clientId: v.client.id, eventId, now: ctx.clock.now() });
    const queued = deliveries.filter((d) => d.trigger === 'replay' && d.state === 'pending').length;
    return { back: `${v.base}/events/${eventId}`, notice: 'replay-queued', n: queued };
  });

  // ----- webhooks ----------------------------------------------------------------------------
  page('/webhooks', async (v) => {
    const p = pageOf(v.q);
    const { rows, total } = await listWebhookRows(ctx.db, v.client.id, p);
    return titled(
      'Webhooks',
      html`${table(
        ['Webhook', 'Name', 'URL', 'Topics', 'Enabled', 'Created'],
        rows.map((w) => [
          html`<span class="id">${w.id}</span>`,
          w.name,
          w.url,
          (w.topics as string[]).join(', '),
          badge(w.enabled ? 'enabled' : 'disabled'),
          when(w.createdAt),
        ]),
        'No webhook: create one with POST /api/v1/webhooks.',
      )}${pager(`${v.base}/webhooks`, {}, p, total)}`,
    );
  });

  // ----- request log -------------------------------------------------------------------------
  page('/requests', async (v) => {
    const p = pageOf(v.q);
    const filters = {
      status: f(v.q, 'status'),
      path: f(v.q, 'path'),
      method: oneOf(f(v.q, 'method')?.toUpperCase(), ['GET', 'POST', 'PATCH', 'PUT', 'DELETE']),
    };
    const r = await listRequestRows(ctx.db, v.client.id, filters, p, listing(v.q));
    return titled(
      'Requests',
      html`<p class="empty">The API requests of the last ${ctx.config.console.requestLogRetentionDays} days (written within a second of their answer).</p>${filterForm(
        `${v.base}/requests`,
        [
          { name: 'status', label: 'Status (404, 4xx)', value: filters.status },
          { name: 'path', label: 'Path starts with', value: filters.path },
          {
            name: 'method',
            label: 'Method',
            value: filters.method,
            options: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'],
          },
        ],
      )}${table(
        ['When', 'Method', 'Path', 'Status', 'Duration', 'Idempotency key'],
        r.rows.map((x) => [
          html`<a href="${v.base}/requests/${x.id}">${when(x.createdAt)}</a>`,
          x.method,
          html`<span class="id">${x.path}</span>`,
          badge(String(x.status)),
          `${x.durationMs} ms`,
          x.idempotencyKey,
        ]),
      )}${pager(`${v.base}/requests`, { ...filters }, p, r.total, r.capped, around(r))}`,
    );
  });

  page('/requests/:requestId', async (v) => {
    const id = (v.req.params as { requestId: string }).requestId;
    if (!isUuid(id)) throw notFound();
    const r = await findRequestRow(ctx.db, v.client.id, id);
    if (!r) throw notFound();
    let body: unknown = r.body;
    try {
      body = r.body === null ? null : JSON.parse(r.body);
    } catch {
      /* cut at the limit: shown as stored */
    }
    return titled(
      `${r.method} ${r.route}`,
      html`${dl([
        ['Request id', html`<code>${r.requestId}</code>`],
        ['Path', html`<code>${r.path}</code>`],
        ['Status', badge(String(r.status))],
        ['Duration', `${r.durationMs} ms`],
        ['Idempotency key', r.idempotencyKey],
        ['When', when(r.createdAt)],
      ])}<h2>Body (secrets and card data redacted)</h2>${body === null ? html`<p class="empty">No body.</p>` : json(body)}`,
    );
  });
}
