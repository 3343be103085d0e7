// The widget frames' script, served by the widget host at /_/{flow}/. The host renders the
// merchant's widget settings into the page; this script gets the payload from the embedding
// page (postMessage, origin checked), reads the wallet's figures from the host with it, and
// draws the widget. The inline wallet flow runs through the page's callbacks: user data, then
// the merchant's backend starts (and authorizes) the intent, then the frame follows the intent
// and reports each change to the page.
import type { WidgetSettings as Settings } from '../modules/clients/settings.ts';
import {
  MSG,
  isMessage,
  type Flow,
  type Message,
  type PageState,
  type PaymentIntentStart,
  type UserData,
} from './protocol.ts';

interface WidgetData {
  walletId: string;
  purchaseAmount: number | null;
  available: number;
  eligibleReward: number;
  rewardMinimumPurchase: number;
  purchaseReward: number | null;
}

interface Intent {
  id: string;
  attributes: { status: string; amount: number; error?: string | null };
}

const body = document.body;
const flow = body.dataset.flow as Flow;
const settings = JSON.parse(body.dataset.settings ?? '{}') as Settings;
const params = new URLSearchParams(location.search);
const parentOrigin = params.get('origin') ?? '';
const clientId = params.get('client') ?? '';
const amountParam = params.get('amount');
// The page's amount, else the one the merchant's backend put in the payload.
let purchaseAmount = amountParam && /^\d+$/.test(amountParam) ? Number(amountParam) : null;
const reference = params.get('reference') ?? undefined;
const app = document.getElementById('app')!;
const live = document.getElementById('status')!;

let payload: string | null = null;
let data: WidgetData | null = null;
const state: PageState = { balanceApplied: false, hideBalanceToggle: false };
let flowBusy = false;
let pendingUserData: ((u: UserData) => void) | null = null;
let pendingStart: ((s: PaymentIntentStart | { error: string }) => void) | null = null;

const money = (cents: number) =>
  `$${Math.floor(cents / 100).toLocaleString('en-US')}.${String(cents % 100).padStart(2, '0')}`;

function post(msg: Message): void {
  // Only the page that embedded us, and only if it said who it is.
  if (parentOrigin && window.parent !== window) window.parent.postMessage(msg, parentOrigin);
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

function announce(text: string): void {
  live.textContent = text;
}

async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const res = await fetch(path, {
    ...init,
    headers: {
      authorization: `Widget ${payload}`,
      'x-client-id': clientId,
      ...(init.body ? { 'content-type': 'application/json' } : {}),
    },
  });
  const json = (await res.json().catch(() => ({}))) as { data?: T; errors?: { detail?: string }[] };
  if (!res.ok || !json.data)
    throw new Error(json.errors?.[0]?.detail ?? `The wallet could not be reached (${res.status}).`);
  return json.data;
}

function icon(): Node[] {
  // The default: Coffer's logo mark, from the widget host (src/http/logo.ts).
  if (!settings.iconUrl) return [el('img', { class: 'icon', src: '/favicon.svg', alt: '' })];
  return [el('img', { class: 'icon', src: settings.iconUrl, alt: '' })];
}

function actionButton(text: string, onClick: () => void, extra: Record<string, string> = {}): HTMLElement {
  const b =
    settings.buttonType === 'link'
      ? el('a', { href: '#', class: 'action action-link', role: 'button', ...extra }, text)
      : el('button', { type: 'button', class: 'action action-button', ...extra }, text);
  b.addEventListener('click', (e) => {
    e.preventDefault();
    if (b.getAttribute('aria-disabled') === 'true') return;
    onClick();
  });
  return b;
}

function appliedAmount(): number {
  if (!data || !state.balanceApplied) return 0;
  return purchaseAmount === null ? data.available : Math.min(data.available, purchaseAmount);
}

function renderBalance(): Node[] {
  const d = data!;
  const id = 'toggle-label';
  const input = el('input', {
    type: 'checkbox',
    id: 'apply',
    class: settings.toggleStyle === 'switch' ? 'switch' : 'checkbox',
    'aria-describedby': 'balance',
  });
  if (settings.toggleStyle === 'switch') input.setAttribute('role', 'switch');
  input.checked = state.balanceApplied;
  if (d.available === 0 || state.paid) input.disabled = true;
  input.addEventListener('change', () => {
    state.balanceApplied = input.checked;
    label.textContent = input.checked ? 'Balance applied' : 'Apply balance';
    const applied = appliedAmount();
    announce(input.checked ? `${money(applied)} of your wallet balance applied.` : 'Wallet balance not applied.');
    post({
      type: MSG.ApplyBalanceToggle,
      data: { applied: input.checked, walletId: d.walletId, appliedAmount: applied, purchaseAmount },
    });
  });
  const label = el(
    'label',
    { for: 'apply', id, class: settings.showToggleLabel ? 'toggle-label' : 'visually-hidden' },
    state.balanceApplied ? 'Balance applied' : 'Apply balance',
  );
  const toggle = el('div', { class: `toggle toggle-${settings.togglePosition}` }, input, label);
  const text = el(
    'div',
    { class: 'text' },
    el('span', { class: 'caption' }, 'Wallet balance'),
    el('strong', { id: 'balance', class: 'amount' }, money(d.available)),
  );
  const row = el('div', { class: `row toggle-at-${settings.togglePosition}` }, ...icon(), text);
  if (!state.hideBalanceToggle) {
    if (settings.togglePosition === 'left') row.prepend(toggle);
    else row.append(toggle);
  }
  return [
    row,
    actionButton('Go to wallet', () => post({ type: MSG.GoToWallet }), {
      class: `${settings.buttonType === 'link' ? 'action action-link' : 'action action-button'} secondary`,
    }),
  ];
}

function renderRewards(): Node[] {
  const d = data!;
  const line =
    purchaseAmount !== null && purchaseAmount < d.rewardMinimumPurchase
      ? `Spend ${money(d.rewardMinimumPurchase)} or more to use your rewards.`
      : d.eligibleReward > 0
        ? `${money(d.eligibleReward)} in rewards can go toward this purchase.`
        : 'No rewards to use on this purchase yet.';
  return [
    el(
      'div',
      { class: 'row' },
      ...icon(),
      el(
        'div',
        { class: 'text' },
        el('span', { class: 'caption' }, 'Rewards'),
        el('strong', { class: 'amount' }, money(d.eligibleReward)),
        el('p', { class: 'note' }, line),
      ),
    ),
  ];
}

function successNodes(reward: number): Node[] {
  const [before, ...rest] = settings.successDescription.split('<reward>');
  const desc = el('p', { class: 'note' }, before ?? '');
  rest.forEach((part) => desc.append(el('strong', {}, money(reward)), part));
  return [
    el(
      'div',
      { class: 'row success' },
      ...icon(),
      el('div', { class: 'text' }, el('h2', { class: 'title' }, settings.successTitle), desc),
    ),
  ];
}

function renderSuccess(): Node[] {
  return successNodes(data!.purchaseReward ?? data!.eligibleReward);
}

function renderWalletFlow(): Node[] {
  const d = data!;
  const button = actionButton(settings.buttonText, () => void runFlow(button));
  const total = purchaseAmount === null ? '' : ` · Total ${money(purchaseAmount)}`;
  return [
    el(
      'div',
      { class: 'row' },
      ...icon(),
      el(
        'div',
        { class: 'text' },
        el('span', { class: 'caption' }, `Wallet balance${total}`),
        el('strong', { class: 'amount' }, money(d.available)),
      ),
    ),
    button,
  ];
}

function render(): void {
  if (!data) return;
  const nodes =
    flow === 'wallet-balance'
      ? renderBalance()
      : flow === 'wallet-rewards'
        ? renderRewards()
        : flow === 'wallet-payment-success'
          ? renderSuccess()
          : renderWalletFlow();
  app.replaceChildren(...nodes);
  app.setAttribute('aria-busy', 'false');
}

function showError(message: string): void {
  app.replaceChildren(el('p', { class: 'error', role: 'alert' }, message));
  app.setAttribute('aria-busy', 'false');
}

async function load(): Promise<void> {
  if (!payload) return;
  try {
    const q = new URLSearchParams();
    if (purchaseAmount !== null) q.set('amount', String(purchaseAmount));
    if (reference) q.set('reference', reference);
    data = (await api<{ attributes: WidgetData }>(`/_/api/widget-data?${q}`)).attributes;
    purchaseAmount ??= data.purchaseAmount;
    render();
  } catch (err) {
    showError(err instanceof Error ? err.message : 'The wallet could not be loaded.');
  }
}

const ask = <T>(type: string, set: (resolve: (v: T) => void) => void, payloadData?: unknown) =>
  new Promise<T>((resolve) => {
    set(resolve);
    post({ type, data: payloadData });
  });

const FINAL = new Set(['Canceled', 'Invalid', 'Expired']);

/** The inline wallet flow: user data → the merchant starts the intent → follow it to the end. */
async function runFlow(button: HTMLElement): Promise<void> {
  if (flowBusy || !data || purchaseAmount === null) return;
  flowBusy = true;
  button.setAttribute('aria-disabled', 'true');
  announce('Checking your wallet…');
  try {
    const user = await ask<UserData>(MSG.GetUserData, (r) => (pendingUserData = r));
    const check = await api<{ attributes: { matches: boolean; reason: string | null } }>('/_/api/user-check', {
      method: 'POST',
      body: JSON.stringify(user),
    });
    if (!check.attributes.matches) throw new Error(check.attributes.reason ?? 'This wallet belongs to someone else.');
    announce('Starting your payment…');
    const started = await ask<PaymentIntentStart | { error: string }>(
      MSG.PaymentIntentStart,
      (r) => (pendingStart = r),
      {
        walletId: data.walletId,
        amount: purchaseAmount,
        reference,
        userData: user,
      },
    );
    if ('error' in started) throw new Error(started.error);
    await follow(started.paymentIntentId);
  } catch (err) {
    announce('');
    const msg = el(
      'p',
      { class: 'error', role: 'alert' },
      err instanceof Error ? err.message : 'The payment could not be made.',
    );
    app.querySelector('.error')?.remove();
    app.append(msg);
  } finally {
    flowBusy = false;
    button.removeAttribute('aria-disabled');
  }
}

async function follow(intentId: string): Promise<void> {
  let last = '';
  for (let i = 0; i < 240; i++) {
    const res = await api<{ intent: Intent; payment: { status: string } | null; reward: number }>(
      `/_/api/payment-intents/${encodeURIComponent(intentId)}`,
    );
    const key = `${res.intent.attributes.status}/${res.payment?.status ?? ''}`;
    if (key !== last) {
      last = key;
      post({ type: MSG.PaymentIntentUpdated, data: res.intent });
    }
    if (res.intent.attributes.status === 'PromotedToPayment' && res.payment && res.payment.status !== 'Created') {
      app.replaceChildren(...successNodes(res.reward));
      announce(`Paid ${money(res.intent.attributes.amount)} with your wallet.`);
      return;
    }
    if (FINAL.has(res.intent.attributes.status))
      throw new Error(`The payment was not made (${res.intent.attributes.status}).`);
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error('The payment is taking longer than expected; check your order status.');
}

window.addEventListener('message', (event: MessageEvent) => {
  if (event.source !== window.parent || event.origin !== parentOrigin || !isMessage(event.data)) return;
  const msg = event.data;
  switch (msg.type) {
    case MSG.WalletWidgetDataUpdated: {
      const p = (msg.data as { payload?: unknown } | undefined)?.payload;
      if (typeof p === 'string' && p !== payload) {
        payload = p;
        void load();
      }
      break;
    }
    case MSG.StateUpdated: {
      const next = msg.data as PageState;
      const changed =
        next.balanceApplied !== state.balanceApplied ||
        next.hideBalanceToggle !== state.hideBalanceToggle ||
        next.paid !== state.paid;
      Object.assign(state, next);
      // Redraw only on a change, so the control the user just used keeps focus.
      if (changed && !flowBusy) render();
      break;
    }
    case MSG.Refresh:
      if (!flowBusy) void load();
      break;
    case MSG.UserData:
      pendingUserData?.((msg.data ?? {}) as UserData);
      pendingUserData = null;
      break;
    case MSG.PaymentIntentStarted:
      pendingStart?.(msg.data as PaymentIntentStart);
      pendingStart = null;
      break;
    case MSG.PaymentIntentStartFailed:
      pendingStart?.({ error: (msg.data as { message?: string })?.message ?? 'The payment could not be started.' });
      pendingStart = null;
      break;
  }
});

// The body's own height: the document's scrollHeight is at least the frame's, so it never shrinks.
new ResizeObserver(() =>
  post({ type: MSG.Resize, data: { height: Math.ceil(document.body.getBoundingClientRect().height) } }),
).observe(document.body);
if (!parentOrigin) showError('This widget must be embedded with main.js.');
else post({ type: MSG.FrameReady });
