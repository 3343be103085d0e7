// Which wallet a payment moves money of, as this process learned it when it made the payment.
// The capture, refund and cancel groups use it to keep a request of a wallet that a running
// group is locking out of the next group (db/groups.ts, rowOf): without it, two groups that
// share wallets wait on each other's wallet locks in turn. A hint, never a fact anything depends on: a
// payment made by another process, or forgotten, has none, and its request then waits on the
// wallet's lock as any transaction would. A payment's wallet never changes.
import { LRUCache } from 'lru-cache';

/** Payments made recently, as many as a few minutes of a busy process makes. */
const wallets = new LRUCache<string, string>({ max: 50_000 });

export function rememberPaymentWallet(paymentId: string, walletId: string | null): void {
  if (walletId) wallets.set(paymentId, walletId);
}

export const walletOfPayment = (paymentId: string): string | undefined => wallets.get(paymentId);
