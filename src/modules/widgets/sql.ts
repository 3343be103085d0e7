// What the widget routes and the widget host read: a wallet with its balances and user, the
// wallets that user filters name, an intent with its payments and linked account. Every query
// is scoped by the client (and, on the host, by the wallet the payload names).
import { and, asc, desc, eq, isNotNull, or, type SQL } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import { paymentIntents, payments, users, wallets } from '../../db/schema.ts';
import { connectedAccounts, findLinkedAccount, type LinkedAccountRow } from '../linked-accounts/sql.ts';
import { findWalletWithBuckets } from '../wallets/sql.ts';
import type { IntentRow } from '../payment-intents/sql.ts';

export async function walletWithUser(db: Executor, clientId: string, walletId: string) {
  const found = await findWalletWithBuckets(db, clientId, walletId);
  if (!found) return undefined;
  const [user] = await db
    .select({
      id: users.id,
      phoneNumber: users.phoneNumber,
      referenceId: users.referenceId,
      stableReferenceId: users.stableReferenceId,
      sessionsRevokedAt: users.sessionsRevokedAt,
      disabled: users.disabled,
    })
    .from(users)
    .where(and(eq(users.clientId, clientId), eq(users.id, found.wallet.userId)));
  return user ? { ...found, user } : undefined;
}

export async function intentOfWallet(
  db: Executor,
  clientId: string,
  walletId: string,
  intentId: string,
): Promise<IntentRow | undefined> {
  const [row] = await db
    .select()
    .from(paymentIntents)
    .where(
      and(
        eq(paymentIntents.clientId, clientId),
        eq(paymentIntents.walletId, walletId),
        eq(paymentIntents.id, intentId),
      ),
    );
  return row;
}

export async function paymentsOfIntent(
  db: Executor,
  clientId: string,
  intentId: string,
): Promise<{ id: string; status: string }[]> {
  return db
    .select({ id: payments.id, status: payments.status })
    .from(payments)
    .where(and(eq(payments.clientId, clientId), eq(payments.intentId, intentId)))
    .orderBy(asc(payments.createdAt), asc(payments.id));
}

/** The wallet's latest promoted intent with this reference: the purchase a success widget is about. */
export async function promotedIntentByReference(
  db: Executor,
  clientId: string,
  walletId: string,
  reference: string,
): Promise<IntentRow | undefined> {
  const [row] = await db
    .select()
    .from(paymentIntents)
    .where(
      and(
        eq(paymentIntents.clientId, clientId),
        eq(paymentIntents.walletId, walletId),
        eq(paymentIntents.reference, reference),
        eq(paymentIntents.status, 'PromotedToPayment'),
      ),
    )
    .orderBy(desc(paymentIntents.createdAt))
    .limit(1);
  return row;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The wallets (at most two: one is the answer, two an ambiguity) of the users any filter names. */
export async function walletsOfUsersMatching(
  db: Executor,
  clientId: string,
  f: { userReference?: string; secondaryUserReference?: string; phoneNumber?: string },
): Promise<string[]> {
  const named: SQL[] = [];
  for (const ref of [f.userReference, f.secondaryUserReference]) {
    if (ref !== undefined) named.push(eq(users.stableReferenceId, ref), eq(users.referenceId, ref));
  }
  if (f.userReference !== undefined && UUID.test(f.userReference))
    named.push(eq(users.id, f.userReference.toLowerCase()));
  if (f.phoneNumber !== undefined) named.push(eq(users.phoneNumber, f.phoneNumber));
  const rows = await db
    .selectDistinct({ id: wallets.id })
    .from(wallets)
    .innerJoin(users, and(eq(users.id, wallets.userId), eq(users.clientId, clientId)))
    .where(and(eq(wallets.clientId, clientId), or(...named)))
    .limit(2);
  return rows.map((r) => r.id);
}

export async function intentById(db: Executor, clientId: string, intentId: string): Promise<IntentRow | undefined> {
  const [row] = await db
    .select()
    .from(paymentIntents)
    .where(and(eq(paymentIntents.clientId, clientId), eq(paymentIntents.id, intentId)));
  return row;
}

/**
 * The account an intent's bank part comes from: the one its latest payment drew on, else the
 * user's first connected account (the one an authorization would draw on).
 */
export async function linkedAccountOfIntent(
  db: Executor,
  clientId: string,
  intentId: string,
  userId: string,
): Promise<LinkedAccountRow | undefined> {
  const [drawn] = await db
    .select({ id: payments.linkedAccountId })
    .from(payments)
    .where(and(eq(payments.clientId, clientId), eq(payments.intentId, intentId), isNotNull(payments.linkedAccountId)))
    .orderBy(desc(payments.createdAt), desc(payments.id))
    .limit(1);
  if (drawn?.id) return findLinkedAccount(db, clientId, userId, drawn.id);
  return (await connectedAccounts(db, clientId, userId))[0];
}
