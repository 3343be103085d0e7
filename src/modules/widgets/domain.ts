// Embeddable widgets (decisions §11): the payload a merchant's backend fetches, and what the
// widget host shows with it: one wallet's balance and rewards, the user check of the inline
// flow, and the intents of that wallet.
import type { Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import { findClient } from '../clients/sql.ts';
import { resolveSettings, type ClientSettings } from '../clients/settings.ts';
import { intentResource } from '../payment-intents/render.ts';
import { usableRewards, walletBalance } from '../wallets/balance.ts';
import * as q from './sql.ts';
import { signWidgetPayload, verifyWidgetPayload, type WidgetClaims } from './token.ts';

const sessionVersion = (revokedAt: Date | null) => revokedAt?.getTime() ?? 0;

export async function issueWidgetPayload(db: Executor, opts: { clientId: string; walletId: string; purchaseAmount?: number; key: Buffer; now: Date }) {
  const found = await q.walletWithUser(db, opts.clientId, opts.walletId);
  if (!found) throw apiError('WalletNotFound', `No wallet ${opts.walletId}.`);
  if (found.wallet.status !== 'Active') throw apiError('WalletClosed');
  return signWidgetPayload(opts.key, {
    clientId: opts.clientId,
    walletId: found.wallet.id,
    userId: found.user.id,
    sessionVersion: sessionVersion(found.user.sessionsRevokedAt),
    purchaseAmount: opts.purchaseAmount,
    now: opts.now,
  });
}

export type WidgetSession = NonNullable<Awaited<ReturnType<typeof q.walletWithUser>>> & { claims: WidgetClaims; settings: ClientSettings };

const WIDGET_AUTH = /^Widget +([A-Za-z0-9+/=]{16,4096})$/;

/**
 * The session a widget frame acts in: a valid payload for this client, whose wallet is still
 * active and whose user's sessions have not been ended since it was issued.
 */
export async function openWidgetSession(db: Executor, opts: { authorization: unknown; clientId: unknown; key: Buffer; now: Date }): Promise<WidgetSession> {
  const m = typeof opts.authorization === 'string' ? WIDGET_AUTH.exec(opts.authorization.trim()) : null;
  if (!m) throw apiError('Unauthorized', 'Send Authorization: Widget <payload>.');
  const claims = await verifyWidgetPayload(opts.key, m[1]!, opts.now);
  if (typeof opts.clientId !== 'string' || opts.clientId.toLowerCase() !== claims.clientId) throw apiError('Unauthorized', 'The payload belongs to another client.');
  const client = await findClient(db, claims.clientId);
  if (!client) throw apiError('Unauthorized', 'The payload names an unknown client.');
  if (client.disabled) throw apiError('ClientDisabled');
  const found = await q.walletWithUser(db, claims.clientId, claims.walletId);
  if (!found || found.user.id !== claims.userId) throw apiError('Unauthorized', 'The payload names an unknown wallet.');
  if (found.wallet.status !== 'Active') throw apiError('WalletClosed');
  if (sessionVersion(found.user.sessionsRevokedAt) !== claims.sessionVersion || found.user.disabled) {
    throw apiError('Unauthorized', "The user's wallet session has ended (their phone number changed); fetch a new payload.");
  }
  return { ...found, claims, settings: resolveSettings(client.settings) };
}

/** The figures a widget shows. `purchaseReward`: rewards the named purchase used, once it is made. */
export async function widgetView(db: Executor, s: WidgetSession, opts: { amount?: number; reference?: string }) {
  opts = { ...opts, amount: opts.amount ?? s.claims.purchaseAmount };
  const b = walletBalance(s.buckets, { purchaseAmount: opts.amount, rewardMinimumPurchase: s.settings.rewardMinimumPurchase });
  const eligible = opts.amount === undefined ? b.available.reward.total : totalOf(usableRewards(s.buckets, opts.amount, s.settings.rewardMinimumPurchase));
  const purchase = opts.reference ? await q.promotedIntentByReference(db, s.claims.clientId, s.wallet.id, opts.reference) : undefined;
  return {
    walletId: s.wallet.id,
    purchaseAmount: opts.amount ?? null,
    available: b.available.total,
    eligibleReward: eligible,
    rewardMinimumPurchase: s.settings.rewardMinimumPurchase,
    purchaseReward: purchase ? purchase.balance.eligibleReward : null,
  };
}

const totalOf = (r: { accrue: number; merchant: number }) => r.accrue + r.merchant;

/**
 * The inline flow signs the user in with the page's user data: the phone number must be the
 * user's current one (spec "Users and identity" rule 4: after a verified change the page must
 * pass the new number, otherwise the wallet asks the user to use it or contact support). The
 * answer says no more than it must: a reference id that does not match is reported before the
 * phone number is looked at, so no answer tells a right number from a wrong one except when
 * everything else matches. Nothing of the user is returned.
 */
export function checkUser(s: WidgetSession, data: { phoneNumber?: string; referenceId?: string }): { matches: boolean; reason: string | null } {
  if (data.referenceId && data.referenceId !== s.user.referenceId && data.referenceId !== s.user.stableReferenceId) {
    return { matches: false, reason: 'This wallet belongs to a different customer account. Contact support.' };
  }
  if (!data.phoneNumber || data.phoneNumber !== s.user.phoneNumber) {
    return { matches: false, reason: 'This wallet is registered to a different phone number. Use your updated number, or contact support.' };
  }
  return { matches: true, reason: null };
}

/** An intent of the session's wallet, as the API renders it, with its latest payment. */
export async function intentView(db: Executor, s: WidgetSession, opts: { intentId: string; baseUrl: string; now: Date }) {
  const intent = await q.intentOfWallet(db, s.claims.clientId, s.wallet.id, opts.intentId);
  if (!intent) throw apiError('PaymentIntentNotFound', `No payment intent ${opts.intentId} for this wallet.`);
  const pays = await q.paymentsOfIntent(db, s.claims.clientId, intent.id);
  return {
    intent: intentResource(intent, pays.map((p) => p.id), opts.baseUrl, opts.now),
    payment: pays.at(-1) ?? null,
    reward: intent.balance.eligibleReward,
  };
}
