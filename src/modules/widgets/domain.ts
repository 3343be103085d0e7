// Embeddable widgets (docs/adr/0013-widget-payloads.md): the tokens a merchant's backend fetches (a wallet's
// payload, a payment intent's linked-account payload, a PaymentMethods session), and what the
// widget host shows with each: one wallet's balance and rewards, the user check of the inline
// flow and the intents of that wallet; one linked account's summary; the merchant's payment
// methods.
import type { Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import { findClient, type ClientRow } from '../clients/sql.ts';
import { resolveSettings, type ClientSettings } from '../clients/settings.ts';
import { findLinkedAccount } from '../linked-accounts/sql.ts';
import { intentResource } from '../payment-intents/render.ts';
import { usableRewards, walletBalance, type Buckets } from '../wallets/balance.ts';
import * as q from './sql.ts';
import {
  signLinkedAccountPayload,
  signWidgetPayload,
  signWidgetSession,
  verifyLinkedAccountPayload,
  verifyWidgetPayload,
  verifyWidgetSession,
  type LinkedAccountClaims,
  type WidgetClaims,
  type WidgetType,
} from './token.ts';

const sessionVersion = (revokedAt: Date | null) => revokedAt?.getTime() ?? 0;

/** The figures a wallet widget shows for a purchase amount (also the payload's `dto`). */
function walletFigures(walletId: string, buckets: Buckets, settings: ClientSettings, amount: number | undefined) {
  const b = walletBalance(buckets, { purchaseAmount: amount, rewardMinimumPurchase: settings.rewardMinimumPurchase });
  const eligible =
    amount === undefined
      ? b.available.reward.total
      : totalOf(usableRewards(buckets, amount, settings.rewardMinimumPurchase));
  return {
    walletId,
    purchaseAmount: amount ?? null,
    available: b.available.total,
    eligibleReward: eligible,
    rewardMinimumPurchase: settings.rewardMinimumPurchase,
  };
}

const totalOf = (r: { accrue: number; merchant: number }) => r.accrue + r.merchant;

/**
 * A wallet's widget payload, with its figures when `includeDto`; undefined when the merchant has
 * no such wallet (another merchant's wallet included).
 */
export async function issueWidgetPayload(
  db: Executor,
  opts: {
    clientId: string;
    walletId: string;
    purchaseAmount?: number;
    includeDto?: boolean;
    settings: ClientSettings;
    key: Buffer;
    now: Date;
  },
) {
  const found = await q.walletWithUser(db, opts.clientId, opts.walletId);
  if (!found) return undefined;
  if (found.wallet.status !== 'Active') throw apiError('WalletClosed');
  const signed = await signWidgetPayload(opts.key, {
    clientId: opts.clientId,
    walletId: found.wallet.id,
    userId: found.user.id,
    sessionVersion: sessionVersion(found.user.sessionsRevokedAt),
    purchaseAmount: opts.purchaseAmount,
    now: opts.now,
  });
  const figures = opts.includeDto
    ? { ...walletFigures(found.wallet.id, found.buckets, opts.settings, opts.purchaseAmount), userId: found.user.id }
    : undefined;
  // Accrue's dto requires `dynamic.value` (a number): the cents the widget shows, spendable on the purchase.
  const dto = figures ? { dynamic: { value: figures.available }, ...figures } : undefined;
  return { ...signed, walletId: found.wallet.id, dto };
}

export interface WalletFilters {
  userReference?: string;
  secondaryUserReference?: string;
  phoneNumber?: string;
}

/**
 * findWalletWidgetData: the wallet of the user the filters name. Each filter given names users
 * (`userReference`: a user id or either reference id, `secondaryUserReference`: either reference
 * id, `phoneNumber`: the user's number); the wallets of all of them must be one. None given: 400
 * InvalidIdentifier; two wallets: 400 MultipleWalletsFound; none: undefined.
 */
export async function findWidgetWallet(
  db: Executor,
  opts: { clientId: string; filters: WalletFilters },
): Promise<string | undefined> {
  const f = opts.filters;
  if (f.userReference === undefined && f.secondaryUserReference === undefined && f.phoneNumber === undefined) {
    throw apiError(
      'InvalidIdentifier',
      'Send filter[userReference], filter[secondaryUserReference] or filter[phoneNumber] to name the wallet.',
      {
        parameter: 'filter[userReference]',
      },
    );
  }
  const wallets = await q.walletsOfUsersMatching(db, opts.clientId, f);
  if (wallets.length > 1)
    throw apiError(
      'MultipleWalletsFound',
      'The filters name users with different wallets; send one that names a single user.',
    );
  return wallets[0];
}

/**
 * getLinkedAccountWidgetData: the linked account that pays for what the wallet does not cover of
 * this intent (the one its payment drew on, else the user's first connected account, which an
 * authorization would draw on), and a payload for the widget host naming it. An unknown intent
 * (or another merchant's) is 404 PaymentIntentNotFound (docs/adr/0002-wire-conventions.md); no account: 400
 * NoLinkedAccountFound.
 */
export async function issueLinkedAccountWidgetData(
  db: Executor,
  opts: { clientId: string; paymentIntentId: string; key: Buffer; now: Date },
) {
  const intent = await q.intentById(db, opts.clientId, opts.paymentIntentId);
  if (!intent) throw apiError('PaymentIntentNotFound', `No payment intent ${opts.paymentIntentId}.`);
  const found = intent.walletId ? await q.walletWithUser(db, opts.clientId, intent.walletId) : undefined;
  if (!found) throw apiError('NoLinkedAccountFound', "The payment intent is a gift's: no user, so no linked account.");
  const account = await q.linkedAccountOfIntent(db, opts.clientId, intent.id, found.user.id);
  if (!account) throw apiError('NoLinkedAccountFound', 'The user has no connected linked account.');
  const signed = await signLinkedAccountPayload(opts.key, {
    clientId: opts.clientId,
    walletId: found.wallet.id,
    userId: found.user.id,
    sessionVersion: sessionVersion(found.user.sessionsRevokedAt),
    paymentIntentId: intent.id,
    linkedAccountId: account.id,
    now: opts.now,
  });
  return { ...signed, intent, account };
}

export async function createWidgetSession(opts: { clientId: string; widgetType: WidgetType; key: Buffer; now: Date }) {
  return signWidgetSession(opts.key, opts);
}

// ----- the widget host's side ------------------------------------------------------------

export type WidgetSession = NonNullable<Awaited<ReturnType<typeof q.walletWithUser>>> & {
  claims: WidgetClaims;
  settings: ClientSettings;
};

const WIDGET_AUTH = /^Widget +([A-Za-z0-9+/=]{16,4096})$/;
const SESSION_AUTH = /^Widget +(wgt_session_[A-Za-z0-9_-]{16,4096})$/;

function tokenFrom(authorization: unknown, pattern: RegExp): string {
  const m = typeof authorization === 'string' ? pattern.exec(authorization.trim()) : null;
  if (!m) throw apiError('Unauthorized', 'Send Authorization: Widget <payload>.');
  return m[1]!;
}

/** The token's client: the one the frame says it is (Client-ID), known and enabled. */
async function openClient(db: Executor, clientId: string, sentClientId: unknown): Promise<ClientRow> {
  if (typeof sentClientId !== 'string' || sentClientId.toLowerCase() !== clientId)
    throw apiError('Unauthorized', 'The payload belongs to another client.');
  const client = await findClient(db, clientId);
  if (!client) throw apiError('Unauthorized', 'The payload names an unknown client.');
  if (client.disabled) throw apiError('ClientDisabled');
  return client;
}

/** The token's wallet: still active, its user's sessions not ended since the token was issued. */
async function openWallet(
  db: Executor,
  c: { clientId: string; walletId: string; userId: string; sessionVersion: number },
) {
  const found = await q.walletWithUser(db, c.clientId, c.walletId);
  if (!found || found.user.id !== c.userId) throw apiError('Unauthorized', 'The payload names an unknown wallet.');
  if (found.wallet.status !== 'Active') throw apiError('WalletClosed');
  if (sessionVersion(found.user.sessionsRevokedAt) !== c.sessionVersion || found.user.disabled) {
    throw apiError(
      'Unauthorized',
      "The user's wallet session has ended (their phone number changed); fetch a new payload.",
    );
  }
  return found;
}

interface HostRequest {
  authorization: unknown;
  clientId: unknown;
  key: Buffer;
  now: Date;
}

/**
 * The session a wallet widget frame acts in: a valid wallet payload for this client, whose
 * wallet is still active and whose user's sessions have not been ended since it was issued.
 */
export async function openWidgetSession(db: Executor, opts: HostRequest): Promise<WidgetSession> {
  const claims = await verifyWidgetPayload(opts.key, tokenFrom(opts.authorization, WIDGET_AUTH), opts.now);
  const client = await openClient(db, claims.clientId, opts.clientId);
  return { ...(await openWallet(db, claims)), claims, settings: resolveSettings(client.settings) };
}

/** The figures a widget shows. `purchaseReward`: rewards the named purchase used, once it is made. */
export async function widgetView(db: Executor, s: WidgetSession, opts: { amount?: number; reference?: string }) {
  const amount = opts.amount ?? s.claims.purchaseAmount;
  const purchase = opts.reference
    ? await q.promotedIntentByReference(db, s.claims.clientId, s.wallet.id, opts.reference)
    : undefined;
  return {
    ...walletFigures(s.wallet.id, s.buckets, s.settings, amount),
    purchaseReward: purchase ? purchase.balance.eligibleReward : null,
  };
}

/**
 * The inline flow signs the user in with the page's user data: the phone number must be the
 * user's current one (spec "Users and identity" rule 4: after a verified change the page must
 * pass the new number, otherwise the wallet asks the user to use it or contact support). The
 * answer says no more than it must: a reference id that does not match is reported before the
 * phone number is looked at, so no answer tells a right number from a wrong one except when
 * everything else matches. Nothing of the user is returned.
 */
export function checkUser(
  s: WidgetSession,
  data: { phoneNumber?: string; referenceId?: string },
): { matches: boolean; reason: string | null } {
  if (data.referenceId && data.referenceId !== s.user.referenceId && data.referenceId !== s.user.stableReferenceId) {
    return { matches: false, reason: 'This wallet belongs to a different customer account. Contact support.' };
  }
  if (!data.phoneNumber || data.phoneNumber !== s.user.phoneNumber) {
    return {
      matches: false,
      reason: 'This wallet is registered to a different phone number. Use your updated number, or contact support.',
    };
  }
  return { matches: true, reason: null };
}

/** An intent of the session's wallet, as the API renders it, with its latest payment. */
export async function intentView(
  db: Executor,
  s: WidgetSession,
  opts: { intentId: string; baseUrl: string; now: Date },
) {
  const intent = await q.intentOfWallet(db, s.claims.clientId, s.wallet.id, opts.intentId);
  if (!intent) throw apiError('PaymentIntentNotFound', `No payment intent ${opts.intentId} for this wallet.`);
  const pays = await q.paymentsOfIntent(db, s.claims.clientId, intent.id);
  return {
    intent: intentResource(
      intent,
      pays.map((p) => p.id),
      opts.baseUrl,
      opts.now,
    ),
    payment: pays.at(-1) ?? null,
    reward: intent.balance.eligibleReward,
  };
}

/**
 * What a linked-account payload shows: the one account it names, while it is still the user's
 * and the wallet session holds (a verified phone change ends it, as for wallet payloads).
 */
export async function linkedAccountView(db: Executor, opts: HostRequest) {
  const claims: LinkedAccountClaims = await verifyLinkedAccountPayload(
    opts.key,
    tokenFrom(opts.authorization, WIDGET_AUTH),
    opts.now,
  );
  await openClient(db, claims.clientId, opts.clientId);
  await openWallet(db, claims);
  const account = await findLinkedAccount(db, claims.clientId, claims.userId, claims.linkedAccountId);
  if (!account) throw apiError('Unauthorized', 'The payload names an unknown linked account.');
  return {
    paymentIntentId: claims.paymentIntentId,
    linkedAccountId: account.id,
    institutionName: account.institutionName,
    accountMask: account.accountMask,
    accountType: account.accountType,
    status: account.status,
  };
}

/** What a PaymentMethods session shows: how the merchant's checkout takes payment; no user data. */
export async function paymentMethodsView(db: Executor, opts: HostRequest) {
  const claims = await verifyWidgetSession(opts.key, tokenFrom(opts.authorization, SESSION_AUTH), opts.now);
  const client = await openClient(db, claims.clientId, opts.clientId);
  const settings = resolveSettings(client.settings);
  return { widgetType: claims.widgetType, paymentMethods: ['Wallet', 'Gift'], rails: settings.rails };
}
