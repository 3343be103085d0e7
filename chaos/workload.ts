// The campaign's clients: each runs a random mix of operations through the SDK until told to
// stop, and records each operation and its final answer in the history.
import { randomUUID } from 'node:crypto';
import type { Coffer } from '@coffer/client';
import { currentOp } from './api.ts';
import type { History, OpRecord } from './history.ts';
import type { Rng } from './rng.ts';

interface WalletState {
  walletId: string;
  userId: string;
  accountId: string;
  merchant: string;
}
interface PaymentState {
  paymentId: string;
  intentId: string;
  merchant: string;
  amount: number;
  /** What captures it: the merchant's capture call (bank), or the card network (card rails, gifts). */
  rail: 'bank' | 'card' | 'gift';
  /** What the card network has authorized on its virtual card. */
  networkAuthorized: number;
  /** 0 until captured; -1 when it no longer can be (or whether it was is unknown). */
  captured: number;
  refunded: number;
}
interface CounterpartyState {
  id: string;
  merchant: string;
  /** Payouts not yet completed or returned. */
  open: string[];
}

export interface Shared {
  history: History;
  /** Unique operation numbers across clients. */
  nextSeq(): number;
  /** One SDK client per merchant name. */
  coffers: Record<string, Coffer>;
}

type Answer = { status?: number; data?: any; code?: string; error?: string };
/** wallet: bank rails; card: bank rails with the card processor; network: card rails (campaign.ts). */
const MERCHANTS = ['wallet', 'card', 'network'] as const;
const ROUTING = '021000021';

export class ChaosClient {
  private wallets: WalletState[] = [];
  private payments: PaymentState[] = [];
  private gifts: string[] = [];
  private counterparties: CounterpartyState[] = [];
  ops = 0;

  constructor(
    readonly id: number,
    private readonly rng: Rng,
    private readonly s: Shared,
  ) {}

  async run(until: () => boolean): Promise<void> {
    while (!until()) {
      const hasWallet = this.wallets.length > 0;
      const kind = !hasWallet
        ? 'newUser'
        : this.rng.weighted({
            newUser: 1,
            deposit: 4,
            withdraw: 2,
            direct: 2,
            authorize: 6,
            capture: 4,
            network: 3,
            cancel: 2,
            refund: 3,
            reward: 2,
            gift: 2,
            balance: 2,
            counterparty: 3,
          });
      await this[kind]();
    }
  }

  /** One API call as one recorded operation. */
  private async call(
    name: string,
    merchant: string,
    refs: Record<string, string>,
    method: 'POST' | 'GET',
    path: string,
    params: Record<string, string>,
    body: unknown,
    extra: { amount?: number; idempotencyKey?: string } = {},
  ): Promise<Answer> {
    const seq = this.s.nextSeq();
    this.ops++;
    const store = { seq, attempts: [] as { status?: number; code?: string; error?: string }[] };
    const at = Date.now();
    let ans: Answer;
    try {
      const api = this.s.coffers[merchant]!.api as any;
      const r = await currentOp.run(store, () =>
        api[method](path, { params: { path: params }, ...(body === undefined ? {} : { body }) }),
      );
      const code = (r.error as { errors?: { code?: string }[] } | undefined)?.errors?.[0]?.code;
      ans = { status: r.response.status, data: r.data, code };
    } catch (err) {
      ans = { error: String((err as Error).cause ?? (err as Error).message).slice(0, 200) };
    }
    const rec: OpRecord = {
      kind: 'op',
      seq,
      client: this.id,
      name,
      merchant,
      refs,
      ...extra,
      at,
      end: Date.now(),
      status: ans.status,
      code: ans.code,
      error: ans.error,
    };
    const resultId = ans.data?.data?.id ?? undefined;
    if (typeof resultId === 'string') rec.resultId = resultId;
    this.s.history.write(rec);
    return ans;
  }

  private ok = (a: Answer) => a.status !== undefined && a.status >= 200 && a.status < 300;
  /** No answer, or a 5xx: the operation may or may not have happened. */
  private unsure = (a: Answer) => a.status === undefined || a.status >= 500;
  private doc = (type: string, attributes: Record<string, unknown>) => ({ data: { type, attributes } });

  private async newUser(): Promise<void> {
    const merchant = this.rng.pick(MERCHANTS);
    const phone = `+1555${String(this.id).padStart(2, '0')}${String(this.rng.int(0, 99999)).padStart(5, '0')}`;
    const u = await this.call(
      'createUser',
      merchant,
      {},
      'POST',
      '/api/v1/users',
      {},
      this.doc('User', { phoneNumber: phone }),
    );
    if (!this.ok(u)) return;
    const userId = u.data.data.id as string;
    const refs = { user: userId };
    if (
      !this.ok(
        await this.call(
          'kycDisclosure',
          merchant,
          refs,
          'POST',
          '/api/v1/users/{userId}/disclosures/kyc',
          { userId },
          undefined,
        ),
      )
    )
      return;
    const app = this.doc('KycApplication', {
      firstName: 'Chaos',
      lastName: `Client${this.id}`,
      dateOfBirth: '1990-01-01',
      email: `c${this.id}-${userId.slice(-8)}@example.com`,
      address: { street: '1 Main', city: 'X', state: 'Y', postalCode: '1', country: 'US' },
    });
    if (
      !this.ok(
        await this.call(
          'kycApplication',
          merchant,
          refs,
          'POST',
          '/api/v1/users/{userId}/kyc/application',
          { userId },
          app,
        ),
      )
    )
      return;
    const acct = await this.call(
      'linkAccount',
      merchant,
      refs,
      'POST',
      '/api/v1/simulation/users/{userId}/linked-accounts',
      { userId },
      undefined,
    );
    if (!this.ok(acct)) return;
    const w = await this.call(
      'createWallet',
      merchant,
      refs,
      'POST',
      '/api/v1/wallets',
      {},
      this.doc('Wallet', { userId }),
    );
    if (!this.ok(w)) return;
    this.wallets.push({ walletId: w.data.data.id, userId, accountId: acct.data.data.id, merchant });
  }

  private wallet = () => this.rng.pick(this.wallets);

  private async deposit(): Promise<void> {
    const w = this.wallet();
    const seqAmount = 20_000 + this.rng.int(0, 50_000);
    const key = randomUUID();
    const refs = { wallet: w.walletId };
    const a = await this.call(
      'deposit',
      w.merchant,
      refs,
      'POST',
      '/api/v1/wallets/{walletId}/transactions',
      { walletId: w.walletId },
      this.doc('OneTimeDeposit', { amount: seqAmount, linkedAccountId: w.accountId, idempotencyKey: key }),
      { amount: seqAmount, idempotencyKey: key },
    );
    if (this.ok(a) && this.rng.chance(0.8))
      await this.call(
        'clearDeposits',
        w.merchant,
        refs,
        'POST',
        '/api/v1/simulation/wallets/{walletId}/clear-pending/{type}',
        { walletId: w.walletId, type: 'bank' },
        undefined,
      );
  }

  private async withdraw(): Promise<void> {
    const w = this.wallet();
    const amount = this.rng.int(100, 3_000);
    const key = randomUUID();
    await this.call(
      'withdraw',
      w.merchant,
      { wallet: w.walletId },
      'POST',
      '/api/v1/wallets/{walletId}/withdraw',
      { walletId: w.walletId },
      this.doc('Withdraw', { amount, idempotencyKey: key }),
      { amount, idempotencyKey: key },
    );
  }

  /**
   * A payment straight from the wallet (POST /payments, no intent): from its balance alone, or
   * with the linked account paying what the balance does not. Refunded later like any payment.
   */
  private async direct(): Promise<void> {
    const w = this.wallet();
    const amount = this.rng.int(100, 4_000);
    const key = randomUUID();
    const linked = this.rng.chance(0.3) ? { linkedAccountId: w.accountId } : {};
    const a = await this.call(
      'directPayment',
      w.merchant,
      { wallet: w.walletId },
      'POST',
      '/api/v1/payments',
      {},
      this.doc('CreatePayment', { walletId: w.walletId, amount, idempotencyKey: key, ...linked }),
      { amount, idempotencyKey: key },
    );
    if (this.ok(a))
      this.payments.push({
        paymentId: a.data.data.id,
        intentId: '',
        merchant: w.merchant,
        amount,
        rail: 'bank',
        networkAuthorized: 0,
        captured: amount,
        refunded: 0,
      });
  }

  private async reward(): Promise<void> {
    const w = this.wallet();
    const amount = this.rng.int(1, 500);
    const key = randomUUID();
    await this.call(
      'reward',
      w.merchant,
      { wallet: w.walletId },
      'POST',
      '/api/v1/rewards',
      {},
      this.doc('IssueReward', { walletId: w.walletId, amount, idempotencyKey: key }),
      { amount, idempotencyKey: key },
    );
  }

  private async balance(): Promise<void> {
    const w = this.wallet();
    await this.call(
      'balance',
      w.merchant,
      { wallet: w.walletId },
      'GET',
      '/api/v1/wallets/{walletId}/balance',
      { walletId: w.walletId },
      undefined,
    );
  }

  private async authorize(): Promise<void> {
    const w = this.wallet();
    const amount = this.rng.int(100, 5_000);
    const intent = await this.call(
      'createIntent',
      w.merchant,
      { wallet: w.walletId },
      'POST',
      '/api/v1/payment-intents',
      {},
      this.doc('CreatePaymentIntent', { amount, walletId: w.walletId }),
      { amount },
    );
    if (!this.ok(intent)) return;
    await this.authorizeIntent(intent.data.data.id, w.merchant, amount, false, { wallet: w.walletId });
  }

  private async authorizeIntent(
    intentId: string,
    merchant: string,
    amount: number,
    gift: boolean,
    refs: Record<string, string>,
  ): Promise<void> {
    const key = randomUUID();
    const a = await this.call(
      'authorize',
      merchant,
      { ...refs, intent: intentId },
      'POST',
      '/api/v1/payment-intents/{paymentIntentId}/authorize',
      { paymentIntentId: intentId },
      this.doc('AuthorizePaymentIntent', { amount, idempotencyKey: key }),
      { amount, idempotencyKey: key },
    );
    const payment = (a.data?.included as { id: string; type: string }[] | undefined)?.find((r) => r.type === 'Payment');
    const rail = gift ? 'gift' : merchant === 'network' ? 'card' : 'bank';
    if (this.ok(a) && payment)
      this.payments.push({
        paymentId: payment.id,
        intentId,
        merchant,
        amount,
        rail,
        networkAuthorized: 0,
        captured: 0,
        refunded: 0,
      });
  }

  /** A payment from a gift: a new one, or one spent before (which may not have that much left). */
  private async gift(): Promise<void> {
    let lookUpId: string;
    let spend: number;
    if (this.gifts.length > 0 && this.rng.chance(0.4)) {
      lookUpId = this.rng.pick(this.gifts);
      spend = this.rng.int(100, 3_000);
    } else {
      const amount = this.rng.int(1_000, 10_000);
      const g = await this.call(
        'createGift',
        'wallet',
        {},
        'POST',
        '/api/v1/simulation/gifts',
        {},
        this.doc('Gift', { amount }),
        { amount },
      );
      if (!this.ok(g)) return;
      lookUpId = g.data.data.id as string;
      this.gifts.push(lookUpId);
      spend = this.rng.int(100, amount);
    }
    const intent = await this.call(
      'createIntent',
      'wallet',
      { gift: lookUpId },
      'POST',
      '/api/v1/payment-intents',
      {},
      this.doc('CreatePaymentIntent', { amount: spend, lookUpId }),
      { amount: spend },
    );
    if (!this.ok(intent)) return;
    await this.authorizeIntent(intent.data.data.id, 'wallet', spend, true, { gift: lookUpId });
  }

  private async capture(): Promise<void> {
    const p =
      this.payments.find((x) => x.captured === 0 && x.rail === 'bank' && this.rng.chance(0.5)) ??
      this.payments.find((x) => x.captured === 0 && x.rail === 'bank');
    if (!p) return this.authorize();
    const amount = this.rng.chance(0.7) ? p.amount : this.rng.int(1, p.amount);
    const a = await this.call(
      'capture',
      p.merchant,
      { payment: p.paymentId, intent: p.intentId },
      'POST',
      '/api/v1/payments/{paymentId}/capture',
      { paymentId: p.paymentId },
      this.doc('CapturePayment', { amount }),
      { amount },
    );
    if (this.ok(a)) p.captured = amount;
    else if (a.status !== undefined && a.status < 500) p.captured = -1; // no longer capturable
  }

  /**
   * A card-rail or gift payment through the card network: the merchant reads the virtual card
   * (on the secure card listener) and charges it; the sandbox's network authorizes it (all of
   * the payment or part of it), then captures (up to what it authorized, or now and then more,
   * which the network refuses), or does both in one step.
   */
  private async network(): Promise<void> {
    const p =
      this.payments.find((x) => x.captured === 0 && x.rail !== 'bank' && this.rng.chance(0.5)) ??
      this.payments.find((x) => x.captured === 0 && x.rail !== 'bank');
    if (!p) return this.rng.chance(0.5) ? this.gift() : this.authorize();
    const refs = { payment: p.paymentId, intent: p.intentId };
    const params = { paymentId: p.paymentId };
    const giveUp = (a: Answer) => {
      // Whether it happened is unknown (the network's simulation takes no idempotency key and the SDK does not repeat it): leave the payment alone.
      if (this.unsure(a)) p.captured = -1;
    };
    if (p.networkAuthorized === 0) {
      if (this.rng.chance(0.7)) {
        const card = await this.call(
          'readCard',
          p.merchant,
          refs,
          'GET',
          '/api/v1/payments/{paymentId}/card',
          params,
          undefined,
        );
        if (!this.ok(card)) {
          if (card.status !== undefined && card.status < 500) p.captured = -1;
          return;
        }
      }
      const amount = this.rng.chance(0.7) ? p.amount : this.rng.int(1, p.amount);
      if (this.rng.chance(0.3)) {
        const a = await this.call(
          'cardAuthCapture',
          p.merchant,
          refs,
          'POST',
          '/api/v1/simulation/{paymentId}/card/auth-capture',
          params,
          this.doc('SimulateCardAuthorizationCapture', { amount }),
          { amount },
        );
        if (this.ok(a)) p.captured = amount;
        else if (a.status !== undefined && a.status < 500) p.captured = -1;
        return giveUp(a);
      }
      const a = await this.call(
        'cardAuth',
        p.merchant,
        refs,
        'POST',
        '/api/v1/simulation/{paymentId}/card/auth',
        params,
        this.doc('SimulateCardAuthorization', { amount }),
        { amount },
      );
      if (!this.ok(a)) {
        if (a.status !== undefined && a.status < 500) p.captured = -1;
        return giveUp(a);
      }
      p.networkAuthorized = amount;
      if (this.rng.chance(0.3)) return; // captured later
    }
    const over = this.rng.chance(0.05);
    const amount = over
      ? p.networkAuthorized + 1
      : this.rng.chance(0.7)
        ? p.networkAuthorized
        : this.rng.int(1, p.networkAuthorized);
    const c = await this.call(
      'cardCapture',
      p.merchant,
      refs,
      'POST',
      '/api/v1/simulation/{paymentId}/card/capture',
      params,
      this.doc('SimulateCardCapture', { amount }),
      { amount },
    );
    if (this.ok(c)) p.captured = amount;
    else if (c.status !== undefined && c.status < 500 && !(over && c.status === 402)) p.captured = -1;
    giveUp(c);
  }

  /**
   * Counterparties: made and funded (an incoming payment, as the sandbox's bank simulates it),
   * paid out to their bank accounts (the payouts job sends the push), and the bank completing
   * or returning a payout it has.
   */
  private async counterparty(): Promise<void> {
    if (this.counterparties.length === 0 || this.rng.chance(0.08)) {
      const merchant = this.rng.pick(['wallet', 'network'] as const);
      const c = await this.call(
        'createCounterparty',
        merchant,
        {},
        'POST',
        '/api/v1/counterparties',
        {},
        this.doc('CreateCounterparty', {
          label: `Chaos payee ${this.id}`,
          accountNumber: String(this.rng.int(10_000_000, 99_999_999)),
          routingNumber: ROUTING,
          accountType: 'Checking',
        }),
      );
      if (!this.ok(c)) return;
      const cp: CounterpartyState = { id: c.data.data.id, merchant, open: [] };
      this.counterparties.push(cp);
      return this.counterpartyDeposit(cp);
    }
    const cp = this.rng.pick(this.counterparties);
    const r = this.rng.next();
    if (r < 0.2) return this.counterpartyDeposit(cp);
    if (r < 0.65 || cp.open.length === 0) {
      const amount = this.rng.int(100, 8_000);
      const key = randomUUID();
      const a = await this.call(
        'payout',
        cp.merchant,
        { counterparty: cp.id },
        'POST',
        '/api/v1/counterparties/{counterpartyId}/payouts',
        { counterpartyId: cp.id },
        this.doc('CreateCounterpartyPayout', { amount, idempotencyKey: key }),
        { amount, idempotencyKey: key },
      );
      if (this.ok(a)) cp.open.push(a.data.data.id);
      return;
    }
    const payoutId = this.rng.pick(cp.open);
    const outcome = this.rng.chance(0.7) ? 'complete' : 'return';
    const a = await this.call(
      outcome === 'complete' ? 'payoutComplete' : 'payoutReturn',
      cp.merchant,
      { counterparty: cp.id, payout: payoutId },
      'POST',
      `/api/v1/simulation/counterparties/{counterpartyId}/payouts/{payoutId}/${outcome}`,
      { counterpartyId: cp.id, payoutId },
      undefined,
    );
    // A payout still Pending (the job has not sent it) is refused 400: it stays open for later.
    if (this.ok(a) || this.unsure(a) || a.code !== 'IllegalOperation')
      cp.open = cp.open.filter((id) => id !== payoutId);
  }

  private async counterpartyDeposit(cp: CounterpartyState): Promise<void> {
    const amount = this.rng.int(5_000, 50_000);
    await this.call(
      'counterpartyDeposit',
      cp.merchant,
      { counterparty: cp.id },
      'POST',
      '/api/v1/simulation/counterparties/{counterpartyId}/deposits',
      { counterpartyId: cp.id },
      this.doc('SimulateCounterpartyDeposit', { amount }),
      { amount },
    );
  }

  private async cancel(): Promise<void> {
    const p = this.payments.find((x) => x.captured === 0);
    if (!p) return this.authorize();
    p.captured = -1;
    if (this.rng.chance(0.5)) {
      await this.call(
        'cancelPayment',
        p.merchant,
        { payment: p.paymentId, intent: p.intentId },
        'POST',
        '/api/v1/payments/{paymentId}/cancel',
        { paymentId: p.paymentId },
        undefined,
      );
    } else {
      await this.call(
        'cancelIntent',
        p.merchant,
        { payment: p.paymentId, intent: p.intentId },
        'POST',
        '/api/v1/payment-intents/{paymentIntentId}/cancel',
        { paymentIntentId: p.intentId },
        undefined,
      );
    }
  }

  private async refund(): Promise<void> {
    const p = this.payments.find((x) => x.captured > x.refunded);
    if (!p) return this.capture();
    const amount = this.rng.int(1, p.captured - p.refunded);
    const key = randomUUID();
    const a = await this.call(
      'refund',
      p.merchant,
      { payment: p.paymentId },
      'POST',
      '/api/v1/payments/{paymentId}/refund',
      { paymentId: p.paymentId },
      this.doc('Refund', { amount, idempotencyKey: key }),
      { amount, idempotencyKey: key },
    );
    if (this.ok(a) || a.status === undefined) p.refunded += amount;
  }
}
