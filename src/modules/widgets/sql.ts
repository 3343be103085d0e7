// What the widget host reads: a wallet with its balances and user, an intent of that wallet
// with its payments. Every query is scoped by the client and the wallet the payload names.
import { and, asc, desc, eq } from 'drizzle-orm';
import type { Executor } from '../../db/open.ts';
import { paymentIntents, payments, users } from '../../db/schema.ts';
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

export async function intentOfWallet(db: Executor, clientId: string, walletId: string, intentId: string): Promise<IntentRow | undefined> {
  const [row] = await db
    .select()
    .from(paymentIntents)
    .where(and(eq(paymentIntents.clientId, clientId), eq(paymentIntents.walletId, walletId), eq(paymentIntents.id, intentId)));
  return row;
}

export async function paymentsOfIntent(db: Executor, clientId: string, intentId: string): Promise<{ id: string; status: string }[]> {
  return db
    .select({ id: payments.id, status: payments.status })
    .from(payments)
    .where(and(eq(payments.clientId, clientId), eq(payments.intentId, intentId)))
    .orderBy(asc(payments.createdAt), asc(payments.id));
}

/** The wallet's latest promoted intent with this reference: the purchase a success widget is about. */
export async function promotedIntentByReference(db: Executor, clientId: string, walletId: string, reference: string): Promise<IntentRow | undefined> {
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
