// main.js: the script a merchant's page loads from the widget host (spec "Embeddable widgets").
// It defines <service-pay>, which renders each widget as an iframe from the widget host, and
// window.servicePay, which carries the payload and the page's callbacks to those frames. The
// secret never reaches the browser: the payload is a short-lived signed token from the
// merchant's backend.
import {
  FLOWS,
  MSG,
  isMessage,
  type BalanceTogglePayload,
  type Flow,
  type Message,
  type PageState,
  type PaymentIntentStart,
  type UserData,
} from './protocol.ts';

type Callback<A extends unknown[] = [], R = void> = (...args: A) => R;

interface ServicePay {
  setBalanceApplied(applied: boolean): void;
  setHideBalanceToggle(hidden: boolean): void;
  setWalletWidgetData(payload: string): void;
  onApplyBalanceToggle(cb: Callback<[BalanceTogglePayload]>): void;
  onGoToWallet(cb: Callback): void;
  onGetUserData(cb: Callback<[], UserData | Promise<UserData>>): void;
  onPaymentIntentStart(
    cb: Callback<
      [{ walletId: string; amount: number; reference?: string; userData: UserData }],
      PaymentIntentStart | Promise<PaymentIntentStart>
    >,
  ): void;
  onPaymentIntentUpdate(cb: Callback<[unknown]>): void;
  readonly version: string;
}

declare global {
  interface Window {
    servicePay: ServicePay;
  }
}

const VERSION = '1.0.0';

(() => {
  if (window.servicePay) return; // loaded twice: keep the first

  const script = (document.currentScript ??
    document.querySelector('script[data-script="service-pay"]')) as HTMLScriptElement | null;
  if (!script?.src) {
    console.error('service-pay: load main.js with <script data-script="service-pay" src=...>');
    return;
  }
  const host = new URL(script.src).origin;
  const clientId = script.dataset.clientId ?? '';
  let payload: string | null = script.dataset.walletWidget ?? null;
  const state: PageState = { balanceApplied: false, hideBalanceToggle: false };
  const on = {
    applyBalanceToggle: [] as Callback<[BalanceTogglePayload]>[],
    goToWallet: [] as Callback[],
    paymentIntentUpdate: [] as Callback<[unknown]>[],
    getUserData: null as null | Callback<[], UserData | Promise<UserData>>,
    paymentIntentStart: null as null | Parameters<ServicePay['onPaymentIntentStart']>[0],
  };
  const frames = new Map<Window, ServicePayElement>();

  /** The wallet id inside a payload (base64 of a signed token whose middle part is JSON). */
  function walletOf(p: string | null): string | null {
    if (!p) return null;
    try {
      const token = atob(p);
      const claims = JSON.parse(atob(token.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/'))) as { wid?: string };
      return claims.wid ?? null;
    } catch {
      return null;
    }
  }

  function post(win: Window, msg: Message): void {
    win.postMessage(msg, host);
  }

  function broadcast(msg: Message): void {
    for (const win of frames.keys()) post(win, msg);
  }

  const call = <A extends unknown[]>(cbs: Callback<A>[], ...args: A) => {
    for (const cb of cbs) {
      try {
        cb(...args);
      } catch (err) {
        console.error('service-pay: a callback threw', err);
      }
    }
  };

  class ServicePayElement extends HTMLElement {
    static observedAttributes = ['widget', 'flow', 'amount', 'reference', 'wallet'];
    #frame: HTMLIFrameElement | null = null;
    #src = '';

    connectedCallback(): void {
      this.render();
    }

    disconnectedCallback(): void {
      if (this.#frame?.contentWindow) frames.delete(this.#frame.contentWindow);
      this.#frame = null;
      this.#src = '';
    }

    attributeChangedCallback(): void {
      if (this.isConnected) this.render();
    }

    get kind(): Flow | null {
      const k = (this.getAttribute('flow') === 'wallet' ? 'wallet' : this.getAttribute('widget')) as Flow | null;
      return k && (FLOWS as readonly string[]).includes(k) ? k : null;
    }

    render(): void {
      const kind = this.kind;
      if (!kind) {
        console.error(
          `service-pay: unknown widget "${this.getAttribute('widget') ?? this.getAttribute('flow')}"; use one of ${FLOWS.join(', ')}`,
        );
        return;
      }
      const q = new URLSearchParams({ client: clientId, origin: location.origin });
      const wallet = this.getAttribute('wallet') ?? walletOf(payload);
      if (wallet) q.set('wallet', wallet);
      for (const a of ['amount', 'reference'] as const) {
        const v = this.getAttribute(a);
        if (v) q.set(a, v);
      }
      const src = `${host}/_/${kind}/?${q}`;
      if (src === this.#src) return;
      this.#src = src;
      if (this.#frame?.contentWindow) frames.delete(this.#frame.contentWindow);
      const frame = document.createElement('iframe');
      frame.src = src;
      frame.title =
        kind === 'wallet'
          ? 'Pay with your wallet'
          : kind === 'wallet-balance'
            ? 'Wallet balance'
            : kind === 'wallet-rewards'
              ? 'Wallet rewards'
              : 'Payment complete';
      frame.setAttribute('allow', '');
      frame.style.cssText = 'border:0;width:100%;height:0;display:block;color-scheme:normal;';
      this.replaceChildren(frame);
      this.#frame = frame;
      // Known once it exists; a frame announces itself (FrameReady) before it is sent anything.
      queueMicrotask(() => {
        if (frame.contentWindow) frames.set(frame.contentWindow, this);
      });
    }

    resize(height: number): void {
      if (this.#frame) this.#frame.style.height = `${Math.ceil(height)}px`;
    }
  }

  function greet(win: Window): void {
    post(win, { type: MSG.StateUpdated, data: state });
    if (payload) post(win, { type: MSG.WalletWidgetDataUpdated, data: { payload } });
  }

  type StartRequest = { amount: number; reference?: string; walletId: string; userData: UserData };

  async function startIntent(win: Window, data: StartRequest): Promise<void> {
    try {
      if (!on.paymentIntentStart) throw new Error('the page has no onPaymentIntentStart callback');
      const started = await on.paymentIntentStart(data);
      if (!started?.paymentIntentId) throw new Error('onPaymentIntentStart returned no paymentIntentId');
      post(win, { type: MSG.PaymentIntentStarted, data: started });
    } catch (err) {
      post(win, {
        type: MSG.PaymentIntentStartFailed,
        data: { message: err instanceof Error ? err.message : String(err) },
      });
    }
  }

  window.addEventListener('message', (event: MessageEvent) => {
    // Only our frames, from the widget host.
    if (event.origin !== host || !isMessage(event.data)) return;
    const win = event.source as Window | null;
    if (!win) return;
    if (!frames.has(win)) {
      // A frame's first message can beat the microtask that records it: match it by window.
      const el = [...document.querySelectorAll('service-pay')].find(
        (e) => e.querySelector('iframe')?.contentWindow === win,
      ) as ServicePayElement | undefined;
      if (!el) return;
      frames.set(win, el);
    }
    const msg = event.data;
    switch (msg.type) {
      case MSG.FrameReady:
        greet(win);
        break;
      case MSG.Resize:
        frames.get(win)!.resize(Number((msg.data as { height: number }).height) || 0);
        break;
      case MSG.ApplyBalanceToggle: {
        const p = msg.data as BalanceTogglePayload;
        state.balanceApplied = Boolean(p.applied);
        broadcast({ type: MSG.StateUpdated, data: state });
        call(on.applyBalanceToggle, p);
        break;
      }
      case MSG.GoToWallet:
        call(on.goToWallet);
        break;
      case MSG.PaymentIntentStart:
        void startIntent(win, msg.data as StartRequest);
        break;
      case MSG.PaymentIntentUpdated: {
        call(on.paymentIntentUpdate, msg.data);
        // Money moved: the other widgets show the wallet as it is now.
        const status = (msg.data as { attributes?: { status?: string } } | undefined)?.attributes?.status;
        if (status === 'PromotedToPayment') {
          state.paid = true;
          broadcast({ type: MSG.StateUpdated, data: state });
          broadcast({ type: MSG.Refresh });
        }
        break;
      }
      case MSG.GetUserData:
        void Promise.resolve(on.getUserData?.() ?? {}).then((data) => post(win, { type: MSG.UserData, data }));
        break;
    }
  });

  window.servicePay = {
    version: VERSION,
    setBalanceApplied(applied) {
      state.balanceApplied = Boolean(applied);
      broadcast({ type: MSG.StateUpdated, data: state });
    },
    setHideBalanceToggle(hidden) {
      state.hideBalanceToggle = Boolean(hidden);
      broadcast({ type: MSG.StateUpdated, data: state });
    },
    setWalletWidgetData(p) {
      payload = p;
      for (const el of document.querySelectorAll('service-pay')) (el as ServicePayElement).render?.();
      broadcast({ type: MSG.WalletWidgetDataUpdated, data: { payload } });
    },
    onApplyBalanceToggle: (cb) => void on.applyBalanceToggle.push(cb),
    onGoToWallet: (cb) => void on.goToWallet.push(cb),
    onGetUserData: (cb) => void (on.getUserData = cb),
    onPaymentIntentStart: (cb) => void (on.paymentIntentStart = cb),
    onPaymentIntentUpdate: (cb) => void on.paymentIntentUpdate.push(cb),
  };

  if (!customElements.get('service-pay')) customElements.define('service-pay', ServicePayElement);
  document.dispatchEvent(new CustomEvent('ServicePay::Ready', { detail: { version: VERSION } }));
})();
