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
  captured: number;
  refunded: number;
  gift: boolean;
}

export interface Shared {
  history: History;
  /** Unique operation numbers across clients. */
  nextSeq(): number;
  /** One SDK client per merchant name. */
  coffers: Record<string, Coffer>;
}

type Answer = { status?: number; data?: any; code?: string; error?: string };
const MERCHANTS = ['wallet', 'card'] as const;

export class ChaosClient {
  private wallets: WalletState[] = [];
  private payments: PaymentState[] = [];
  private gifts: string[] = [];
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
        : this.rng.weighted({ newUser: 1, deposit: 4, withdraw: 2, authorize: 6, capture: 4, cancel: 2, refund: 3, reward: 2, gift: 1, balance: 2 });
      await this[kind]();
    }
  }

  /** One API call as one recorded operation. */
  private async call(name: string, merchant: string, refs: Record<string, string>, method: 'POST' | 'GET', path: string, params: Record<string, string>, body: unknown, extra: { amount?: number; idempotencyKey?: string } = {}): Promise<Answer> {
    const seq = this.s.nextSeq();
    this.ops++;
    const store = { seq, attempts: [] as { status?: number; code?: string; error?: string }[] };
    const at = Date.now();
    let ans: Answer;
    try {
      const api = this.s.coffers[merchant]!.api as any;
      const r = await currentOp.run(store, () => api[method](path, { params: { path: params }, ...(body === undefined ? {} : { body }) }));
      const code = (r.error as { errors?: { code?: string }[] } | undefined)?.errors?.[0]?.code;
      ans = { status: r.response.status, data: r.data, code };
    } catch (err) {
      ans = { error: String((err as Error).cause ?? (err as Error).message).slice(0, 200) };
    }
    const rec: OpRecord = { kind: 'op', seq, client: this.id, name, merchant, refs, ...extra, at, end: Date.now(), status: ans.status, code: ans.code, error: ans.error };
    const resultId = ans.data?.data?.id ?? undefined;
    if (typeof resultId === 'string') rec.resultId = resultId;
    this.s.history.write(rec);
    return ans;
  }

  private ok = (a: Answer) => a.status !== undefined && a.status >= 200 && a.status < 300;
  private doc = (type: string, attributes: Record<string, unknown>) => ({ data: { type, attributes } });

  private async newUser(): Promise<void> {
    const merchant = this.rng.pick(MERCHANTS);
    const phone = `+1555${String(this.id).padStart(2, '0')}${String(this.rng.int(0, 99999)).padStart(5, '0')}`;
    const u = await this.call('createUser', merchant, {}, 'POST', '/api/v1/users', {}, this.doc('User', { phoneNumber: phone }));
    if (!this.ok(u)) return;
    const userId = u.data.data.id as string;
    const refs = { user: userId };
    if (!this.ok(await this.call('kycDisclosure', merchant, refs, 'POST', '/api/v1/users/{userId}/disclosures/kyc', { userId }, undefined))) return;
    const app = this.doc('KycApplication', {
      firstName: 'Chaos',
      lastName: `Client${this.id}`,
      dateOfBirth: '1990-01-01',
      email: `c${this.id}-${userId.slice(-8)}@example.com`,
      address: { street: '1 Main', city: 'X', state: 'Y', postalCode: '1', country: 'US' },
    });
    if (!this.ok(await this.call('kycApplication', merchant, refs, 'POST', '/api/v1/users/{userId}/kyc/application', { userId }, app))) return;
    const acct = await this.call('linkAccount', merchant, refs, 'POST', '/api/v1/simulation/users/{userId}/linked-accounts', { userId }, undefined);
    if (!this.ok(acct)) return;
    const w = await this.call('createWallet', merchant, refs, 'POST', '/api/v1/wallets', {}, this.doc('Wallet', { userId }));
    if (!this.ok(w)) return;
    this.wallets.push({ walletId: w.data.data.id, userId, accountId: acct.data.data.id, merchant });
  }

  private wallet = () => this.rng.pick(this.wallets);

  private async deposit(): Promise<void> {
    const w = this.wallet();
    const seqAmount = 20_000 + this.rng.int(0, 50_000);
    const key = randomUUID();
    const refs = { wallet: w.walletId };
    const a = await this.call('deposit', w.merchant, refs, 'POST', '/api/v1/wallets/{walletId}/transactions', { walletId: w.walletId }, this.doc('OneTimeDeposit', { amount: seqAmount, linkedAccountId: w.accountId, idempotencyKey: key }), { amount: seqAmount, idempotencyKey: key });
    if (this.ok(a) && this.rng.chance(0.8)) await this.call('clearDeposits', w.merchant, refs, 'POST', '/api/v1/simulation/wallets/{walletId}/clear-pending/{type}', { walletId: w.walletId, type: 'bank' }, undefined);
  }

  private async withdraw(): Promise<void> {
    const w = this.wallet();
    const amount = this.rng.int(100, 3_000);
    const key = randomUUID();
    await this.call('withdraw', w.merchant, { wallet: w.walletId }, 'POST', '/api/v1/wallets/{walletId}/withdraw', { walletId: w.walletId }, this.doc('Withdraw', { amount, idempotencyKey: key }), { amount, idempotencyKey: key });
  }

  private async reward(): Promise<void> {
    const w = this.wallet();
    const amount = this.rng.int(1, 500);
    const key = randomUUID();
    await this.call('reward', w.merchant, { wallet: w.walletId }, 'POST', '/api/v1/rewards', {}, this.doc('IssueReward', { walletId: w.walletId, amount, idempotencyKey: key }), { amount, idempotencyKey: key });
  }

  private async balance(): Promise<void> {
    const w = this.wallet();
    await this.call('balance', w.merchant, { wallet: w.walletId }, 'GET', '/api/v1/wallets/{walletId}/balance', { walletId: w.walletId }, undefined);
  }

  private async authorize(): Promise<void> {
    const w = this.wallet();
    const amount = this.rng.int(100, 5_000);
    const intent = await this.call('createIntent', w.merchant, { wallet: w.walletId }, 'POST', '/api/v1/payment-intents', {}, this.doc('CreatePaymentIntent', { amount, walletId: w.walletId }), { amount });
    if (!this.ok(intent)) return;
    await this.authorizeIntent(intent.data.data.id, w.merchant, amount, false, { wallet: w.walletId });
  }

  private async authorizeIntent(intentId: string, merchant: string, amount: number, gift: boolean, refs: Record<string, string>): Promise<void> {
    const key = randomUUID();
    const a = await this.call('authorize', merchant, { ...refs, intent: intentId }, 'POST', '/api/v1/payment-intents/{paymentIntentId}/authorize', { paymentIntentId: intentId }, this.doc('AuthorizePaymentIntent', { amount, idempotencyKey: key }), { amount, idempotencyKey: key });
    const payment = (a.data?.included as { id: string; type: string }[] | undefined)?.find((r) => r.type === 'Payment');
    if (this.ok(a) && payment) this.payments.push({ paymentId: payment.id, intentId, merchant, amount, captured: 0, refunded: 0, gift });
  }

  private async gift(): Promise<void> {
    const amount = this.rng.int(1_000, 10_000);
    const g = await this.call('createGift', 'wallet', {}, 'POST', '/api/v1/simulation/gifts', {}, this.doc('Gift', { amount }), { amount });
    if (!this.ok(g)) return;
    const lookUpId = g.data.data.id as string;
    this.gifts.push(lookUpId);
    const spend = this.rng.int(100, amount);
    const intent = await this.call('createIntent', 'wallet', { gift: lookUpId }, 'POST', '/api/v1/payment-intents', {}, this.doc('CreatePaymentIntent', { amount: spend, lookUpId }), { amount: spend });
    if (!this.ok(intent)) return;
    await this.authorizeIntent(intent.data.data.id, 'wallet', spend, true, { gift: lookUpId });
  }

  private async capture(): Promise<void> {
    const p = this.payments.find((x) => x.captured === 0 && !x.gift && this.rng.chance(0.5)) ?? this.payments.find((x) => x.captured === 0 && !x.gift);
    if (!p) return this.authorize();
    const amount = this.rng.chance(0.7) ? p.amount : this.rng.int(1, p.amount);
    const a = await this.call('capture', p.merchant, { payment: p.paymentId, intent: p.intentId }, 'POST', '/api/v1/payments/{paymentId}/capture', { paymentId: p.paymentId }, this.doc('CapturePayment', { amount }), { amount });
    if (this.ok(a)) p.captured = amount;
    else if (a.status !== undefined && a.status < 500) p.captured = -1; // no longer capturable
  }

  private async cancel(): Promise<void> {
    const p = this.payments.find((x) => x.captured === 0);
    if (!p) return this.authorize();
    p.captured = -1;
    if (this.rng.chance(0.5)) {
      await this.call('cancelPayment', p.merchant, { payment: p.paymentId, intent: p.intentId }, 'POST', '/api/v1/payments/{paymentId}/cancel', { paymentId: p.paymentId }, undefined);
    } else {
      await this.call('cancelIntent', p.merchant, { payment: p.paymentId, intent: p.intentId }, 'POST', '/api/v1/payment-intents/{paymentIntentId}/cancel', { paymentIntentId: p.intentId }, undefined);
    }
  }

  private async refund(): Promise<void> {
    const p = this.payments.find((x) => x.captured > x.refunded);
    if (!p) return this.capture();
    const amount = this.rng.int(1, p.captured - p.refunded);
    const key = randomUUID();
    const a = await this.call('refund', p.merchant, { payment: p.paymentId }, 'POST', '/api/v1/payments/{paymentId}/refund', { paymentId: p.paymentId }, this.doc('Refund', { amount, idempotencyKey: key }), { amount, idempotencyKey: key });
    if (this.ok(a) || a.status === undefined) p.refunded += amount;
  }
}
