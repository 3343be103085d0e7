// Which wallet an intent spends from, as this process learned it when it created the intent.
// The authorize groups use it to keep a request of a wallet that a running group is charging
// out of the next group (db/groups.ts, rowOf). A hint, never a fact anything depends on: an
// intent created by another process, or forgotten, has none, and its authorize then waits on
// the wallet's lock as any transaction would. An intent's wallet never changes.
import { LRUCache } from 'lru-cache';

/** Intents created and not yet authorized, as many as a few minutes of a busy process makes. */
const wallets = new LRUCache<string, string>({ max: 50_000 });

export function rememberIntentWallet(intentId: string, walletId: string | null): void {
  if (walletId) wallets.set(intentId, walletId);
}

export const walletOfIntent = (intentId: string): string | undefined => wallets.get(intentId);
