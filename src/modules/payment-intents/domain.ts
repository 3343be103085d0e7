// Payment intents (spec "Payment intents", docs/payments.md#payments-in-detail): what a checkout will charge and to
// what: a wallet (by id, or by a scanned barcode) or a gift. Authorization is in authorize.ts.
import { uuidv7 } from '../../ids.ts';
import { WriteBatch } from '../../db/batch.ts';
import type { Db, Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import type { Page, SortKey } from '../../http/paging.ts';
import type { AuthenticatedClient } from '../clients/authenticate.ts';
import { giftAvailable } from '../gifts/domain.ts';
import { findGift } from '../gifts/sql.ts';
import { cancelCreatedPayment, emitIntent } from '../payments/domain.ts';
import type { RenderContext } from '../payments/render.ts';
import type { PaymentRow } from '../payments/sql.ts';
import { walletBalance, type Buckets } from '../wallets/balance.ts';
import { checkBarcode } from '../wallets/domain.ts';
import { findBarcode, incrementBarcodeUse } from '../wallets/sql.ts';
import { effectiveStatus } from './render.ts';
import { submitIntentWrite } from './create-groups.ts';
import * as q from './sql.ts';
import { rememberIntentWallet } from './wallet-hints.ts';

export interface CreateIntentInput {
  client: AuthenticatedClient;
  amount: number;
  walletId?: string;
  lookUpId?: string;
  reference?: string;
  billingAddress?: Record<string, string>;
  email?: string;
  fullName?: string;
  phoneNumber?: string;
  rc: RenderContext;
  now: Date;
}

/** The balance block: what the wallet can put toward this amount, and the most it may authorize. */
function walletBalanceBlock(
  buckets: Buckets,
  connected: boolean,
  amount: number,
  settings: AuthenticatedClient['settings'],
) {
  const b = walletBalance(buckets, { purchaseAmount: amount, rewardMinimumPurchase: settings.rewardMinimumPurchase });
  return {
    available: b.available.total,
    eligibleReward: b.available.reward.total,
    upperLimit: b.available.total + (connected ? settings.bankFundingLimit : 0),
  };
}

/**
 * Creates an intent with exactly one of `walletId` or `lookUpId`. A lookUpId is a wallet
 * barcode first (scan-and-pay; the scan uses one of its uses), then a gift. Wallet intents need
 * KYC Approved and an Active wallet, or they are created Invalid with `error`; gift intents
 * skip KYC.
 *
 * By `walletId` (the common case) it is one read and one write, without a transaction: the
 * intent and its event are written by a single statement, shared with the creations that are
 * ready in the same turn of the event loop (create-groups.ts), and the balance block is, by
 * definition, what was true when it was read. A scanned barcode is locked and used up, so that
 * path runs in a transaction.
 */
export async function createIntent(db: Db, i: CreateIntentInput): Promise<q.IntentRow> {
  if ((i.walletId === undefined) === (i.lookUpId === undefined)) {
    throw apiError('ValidationError', 'Send exactly one of `walletId` or `lookUpId`.', { pointer: '/data/attributes' });
  }
  if (i.walletId) {
    const wallet = await q.walletIntentContext(db, i.client.id, i.walletId);
    if (!wallet)
      throw apiError('WalletIdentifierNotFound', `No wallet ${i.walletId}.`, {
        pointer: '/data/attributes/walletId',
      });
    const batch = new WriteBatch();
    const intent = await writeIntent(db, batch, i, { wallet });
    await submitIntentWrite(db, batch);
    rememberIntentWallet(intent.id, intent.walletId);
    return intent;
  }
  const intent = await db.transaction(async (tx) => {
    const batch = new WriteBatch();
    const barcode = await findBarcode(tx, i.client.id, i.lookUpId!, { forUpdate: true });
    let intent: q.IntentRow;
    if (barcode) {
      try {
        checkBarcode(barcode, i.now);
      } catch (err) {
        (err as { items?: { source?: unknown }[] }).items?.forEach(
          (item) => (item.source = { pointer: '/data/attributes/lookUpId' }),
        );
        throw err;
      }
      await incrementBarcodeUse(tx, barcode.id, i.now);
      intent = await writeIntent(tx, batch, i, {
        wallet: (await q.walletIntentContext(tx, i.client.id, barcode.walletId))!,
        initiator: 'Customer',
      });
    } else {
      const gift = await findGift(tx, i.client.id, i.lookUpId!);
      if (!gift) throw apiError('LookUpIdNotFound', undefined, { pointer: '/data/attributes/lookUpId' });
      intent = await writeIntent(tx, batch, i, { gift: { id: gift.id, available: await giftAvailable(tx, gift.id) } });
    }
    await batch.flush(tx);
    return intent;
  });
  rememberIntentWallet(intent.id, intent.walletId);
  return intent;
}

/** The new intent and its PaymentIntentCreated event, into the batch. */
async function writeIntent(
  ex: Executor,
  batch: WriteBatch,
  i: CreateIntentInput,
  to: { wallet: q.WalletIntentContext; initiator?: 'Customer' } | { gift: { id: string; available: number } },
): Promise<q.IntentRow> {
  let status = 'Promotable';
  let error: string | null = null;
  let balance: q.IntentRow['balance'];
  if ('wallet' in to) {
    const w = to.wallet;
    if (w.status !== 'Active') [status, error] = ['Invalid', 'WalletClosed'];
    else if (w.kycStatus !== 'Approved') [status, error] = ['Invalid', 'InvalidKycStatus'];
    balance = walletBalanceBlock(w.buckets as Buckets, w.connected, i.amount, i.client.settings);
  } else {
    balance = { available: to.gift.available, eligibleReward: 0, upperLimit: to.gift.available };
  }
  const wallet = 'wallet' in to ? to.wallet : undefined;
  const intent: q.IntentRow = {
    id: uuidv7(),
    clientId: i.client.id,
    walletId: wallet?.id ?? null,
    giftId: 'gift' in to ? to.gift.id : null,
    userId: wallet?.userId ?? null,
    amount: i.amount,
    status,
    error,
    reference: i.reference ?? null,
    initiator: 'wallet' in to ? (to.initiator ?? 'Merchant') : 'Customer',
    paymentMethod: 'gift' in to ? 'Gift' : 'Wallet',
    lookUpId: i.lookUpId ?? null,
    balance,
    billingAddress: i.billingAddress ?? null,
    email: i.email ?? null,
    fullName: i.fullName ?? null,
    phoneNumber: i.phoneNumber ?? null,
    expiresAt: new Date(i.now.getTime() + i.client.settings.paymentIntentTtlSeconds * 1000),
    createdAt: i.now,
    updatedAt: i.now,
  };
  batch.add(q.insertIntentPart(intent));
  await emitIntent(ex, 'PaymentIntentCreated', intent, i.rc, i.now, { batch, paymentIds: [] });
  return intent;
}

export async function getIntent(db: Executor, opts: { clientId: string; intentId: string }): Promise<q.IntentRow> {
  const intent = await q.findIntent(db, opts.clientId, opts.intentId);
  if (!intent) throw apiError('PaymentIntentNotFound', `No payment intent ${opts.intentId}.`);
  return intent;
}

export async function listIntents(
  db: Executor,
  opts: { clientId: string; filters: q.IntentFilters; sort: SortKey<q.IntentSortField>[]; page: Page; now: Date },
) {
  return q.listIntentRows(db, opts.clientId, opts.filters, opts.sort, opts.page, opts.now);
}

/** The balance block recomputed now (include=balance on lists). */
export async function refreshBalance(
  db: Executor,
  intent: q.IntentRow,
  client: AuthenticatedClient,
): Promise<q.IntentRow['balance']> {
  if (intent.giftId) {
    const left = await giftAvailable(db, intent.giftId);
    return { available: left, eligibleReward: 0, upperLimit: left };
  }
  const wallet = (await q.walletIntentContext(db, client.id, intent.walletId!))!;
  return walletBalanceBlock(wallet.buckets as Buckets, wallet.connected, intent.amount, client.settings);
}

const CANCELABLE = new Set(['Promotable', 'Invalid', 'RequiresAction']);

/** POST /payment-intents/{id}/cancel (cancel-groups.ts). */
export interface CancelIntentInput {
  clientId: string;
  intentId: string;
  rc: RenderContext;
  now: Date;
}

/**
 * Promotable, Invalid or RequiresAction → Canceled. PromotedToPayment → Canceled only while its
 * payment is Created, which is canceled too (its funds released). Anything else is 400. The
 * caller holds the intent locked, then its active payment (read after the intent's lock, so a
 * capture that got there first is seen as such) and the payment's released accounts (`held`):
 * the writes go to `batch`. Returns the intent as canceled.
 */
export async function cancelLockedIntent(
  tx: Executor,
  intent: q.IntentRow,
  c: CancelIntentInput & {
    paymentIds: string[];
    payment: PaymentRow | undefined;
    held: ReadonlySet<string>;
    batch: WriteBatch;
  },
): Promise<q.IntentRow> {
  const status = effectiveStatus(intent, c.now);
  if (status === 'PromotedToPayment') {
    if (c.payment?.status !== 'Created') {
      throw apiError(
        'IllegalOperation',
        `The intent's payment is ${c.payment?.status ?? 'gone'}; only an authorization not yet captured can be canceled.`,
      );
    }
    await cancelCreatedPayment(tx, c.payment, {
      clientId: c.clientId,
      rc: c.rc,
      now: c.now,
      reason: 'The payment intent was canceled.',
      batch: c.batch,
      locked: c.held,
    });
  } else if (!CANCELABLE.has(status)) {
    throw apiError('IllegalOperation', `A ${status} payment intent cannot be canceled.`);
  }
  const patch = { status: 'Canceled', updatedAt: c.now };
  c.batch.add(q.updateIntentPart(intent.id, patch));
  const canceled: q.IntentRow = { ...intent, ...patch };
  await emitIntent(tx, 'PaymentIntentUpdated', canceled, c.rc, c.now, { batch: c.batch, paymentIds: c.paymentIds });
  return canceled;
}

/** Job: intents past expiresAt are recorded Expired (they already read so) and announced. */
export async function expireIntents(db: Db, opts: { rc: RenderContext; now: () => Date }): Promise<number> {
  return db.transaction(async (tx) => {
    const now = opts.now();
    const due = await q.lockDueExpiries(tx, now, 200);
    for (const intent of due) {
      const expired = await q.updateIntent(tx, intent.id, { status: 'Expired', updatedAt: now });
      await emitIntent(tx, 'PaymentIntentUpdated', expired, opts.rc, now);
    }
    return due.length;
  });
}
