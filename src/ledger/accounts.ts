// Ledger accounts: which exist, who owns them, which are tracked and which may go negative.
//
// Sign convention: an account's balance is the sum of its postings. Wallet, gift and
// counterparty balances are positive when Coffer owes that money to their owner; the outside
// world (banks, card networks) and the platform's and merchant's funding accounts go negative
// as money flows in from them.
import { and, eq, inArray } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
import { uuidv7 } from '../ids.ts';
import type { Executor } from '../db/open.ts';
import { ledgerAccounts } from '../db/schema.ts';

export const WALLET_CODES = [
  'deposit.available',
  'deposit.pending',
  'deposit.reserved',
  'reward.accrue.available',
  'reward.accrue.pending',
  'reward.accrue.reserved',
  'reward.merchant.available',
  'reward.merchant.pending',
  'reward.merchant.reserved',
] as const;
export type WalletCode = (typeof WALLET_CODES)[number];

const COUNTERPARTY_CODES = ['counterparty.pending', 'counterparty.available'] as const;
export type CounterpartyCode = (typeof COUNTERPARTY_CODES)[number];

const GIFT_CODES = ['gift.available', 'gift.reserved'] as const;
export type GiftCode = (typeof GIFT_CODES)[number];

/** Per-merchant accounts for money outside wallets. Untracked: no hot row to update. */
const CLIENT_CODES = [
  'external.bank', // transfers to and from bank accounts (ACH)
  'external.card_network', // card-rail settlement
  'external.cash', // payments taken outside Coffer (externalPayments)
  'platform.fees', // fee revenue
  'platform.rewards', // funding of platform rewards (accrue)
  'merchant.rewards', // funding of merchant rewards
  'merchant.gifts', // funding of gifts
  'merchant.settlement', // captured payments owed to the merchant
] as const;
export type ClientCode = (typeof CLIENT_CODES)[number];

export type OwnerType = 'wallet' | 'counterparty' | 'gift' | 'client';

interface AccountSpec {
  tracked: boolean;
  allowNegative: boolean;
}

const SPEC: Record<OwnerType, AccountSpec> = {
  // What a user holds can never be negative.
  wallet: { tracked: true, allowNegative: false },
  gift: { tracked: true, allowNegative: false },
  // Counterparties pay fees from their balance; it may go below zero.
  counterparty: { tracked: true, allowNegative: true },
  client: { tracked: false, allowNegative: true },
};

const CODES: Record<OwnerType, readonly string[]> = {
  wallet: WALLET_CODES,
  counterparty: COUNTERPARTY_CODES,
  gift: GIFT_CODES,
  client: CLIENT_CODES,
};

/**
 * Account ids never change once created: each owner's ids by code are cached per process, filled
 * only from committed rows (a frozen record, shared by every caller). Both caches are bounded:
 * a server that touches millions of wallets keeps the most recent (about 1.5 KB per owner
 * cached), and a miss is one indexed read.
 */
const CACHED_OWNERS = 100_000;
const idCache = new LRUCache<string, Readonly<Record<string, string>>>({ max: CACHED_OWNERS });
/** Whether each account id seen keeps a cached balance (room for every account of as many owners). */
const trackedById = new LRUCache<string, boolean>({
  max: CACHED_OWNERS * Math.max(...Object.values(CODES).map((c) => c.length)),
});

/** Tests: forgets every cached owner and account, as if a busy server had evicted them all. */
export function forgetCachedAccounts(): void {
  idCache.clear();
  trackedById.clear();
}

/**
 * Whether each account keeps a cached balance (ids from accountIds(), or any ledger account's:
 * one an evicted cache entry forgot is read again). An id that is no ledger account is a bug.
 */
export async function trackingOf(db: Executor, accountIds: Iterable<string>): Promise<ReadonlyMap<string, boolean>> {
  const out = new Map<string, boolean>();
  const missing: string[] = [];
  for (const id of accountIds) {
    const t = trackedById.get(id);
    if (t === undefined) missing.push(id);
    else out.set(id, t);
  }
  if (missing.length > 0) {
    const rows = await db
      .select({ id: ledgerAccounts.id, tracked: ledgerAccounts.tracked })
      .from(ledgerAccounts)
      .where(inArray(ledgerAccounts.id, [...new Set(missing)]));
    for (const r of rows) {
      trackedById.set(r.id, r.tracked);
      out.set(r.id, r.tracked);
    }
    const unknown = missing.find((id) => !out.has(id));
    if (unknown !== undefined) throw new Error(`${unknown} is not a ledger account`);
  }
  return out;
}

/** Creates every account of a new owner (in the owner's creating transaction). */
export async function openAccounts(
  tx: Executor,
  opts: { clientId: string; ownerType: OwnerType; ownerId: string; now: Date },
): Promise<void> {
  const spec = SPEC[opts.ownerType];
  await tx
    .insert(ledgerAccounts)
    .values(
      CODES[opts.ownerType].map((code) => ({
        id: uuidv7(),
        clientId: opts.clientId,
        ownerType: opts.ownerType,
        ownerId: opts.ownerId,
        code,
        tracked: spec.tracked,
        allowNegative: spec.allowNegative,
        createdAt: opts.now,
      })),
    )
    .onConflictDoNothing();
}

/**
 * The ids of an owner's accounts by code. Outside a transaction (or for owners created in an
 * earlier one) the answer is cached.
 */
export async function accountIds<C extends string>(
  db: Executor,
  opts: { ownerType: OwnerType; ownerId: string },
): Promise<Record<C, string>> {
  const key = `${opts.ownerType}:${opts.ownerId}`;
  // Cached ids were read from committed rows, so their tracking is known too.
  const cached = idCache.get(key);
  if (cached) return cached as Record<C, string>;
  const codes = CODES[opts.ownerType];
  const rows = await db
    .select({ id: ledgerAccounts.id, code: ledgerAccounts.code })
    .from(ledgerAccounts)
    .where(and(eq(ledgerAccounts.ownerType, opts.ownerType), eq(ledgerAccounts.ownerId, opts.ownerId)));
  if (rows.length !== codes.length)
    throw new Error(`${opts.ownerType} ${opts.ownerId} has ${rows.length} of ${codes.length} ledger accounts`);
  for (const r of rows) trackedById.set(r.id, SPEC[opts.ownerType].tracked);
  const ids = Object.freeze(Object.fromEntries(rows.map((r) => [r.code, r.id])));
  idCache.set(key, ids);
  return ids as Record<C, string>;
}

const ensuredClients = new Set<string>();

/**
 * The merchant-level accounts, created on first use. Called with the database handle (never
 * inside a business transaction) so the created rows are committed before their ids are cached.
 */
export async function clientAccountIds(db: Executor, clientId: string): Promise<Record<ClientCode, string>> {
  if (!ensuredClients.has(clientId)) {
    await openAccounts(db, { clientId, ownerType: 'client', ownerId: clientId, now: new Date() });
    ensuredClients.add(clientId);
  }
  return accountIds<ClientCode>(db, { ownerType: 'client', ownerId: clientId });
}

/** Balances of tracked accounts, by owner and code. */
export async function balancesOf(
  db: Executor,
  ownerType: OwnerType,
  ownerIds: string[],
): Promise<Map<string, Record<string, number>>> {
  const out = new Map<string, Record<string, number>>();
  if (ownerIds.length === 0) return out;
  const rows = await db
    .select({ ownerId: ledgerAccounts.ownerId, code: ledgerAccounts.code, balance: ledgerAccounts.balance })
    .from(ledgerAccounts)
    .where(and(eq(ledgerAccounts.ownerType, ownerType), inArray(ledgerAccounts.ownerId, ownerIds)));
  for (const r of rows) {
    const m = out.get(r.ownerId) ?? {};
    m[r.code] = r.balance;
    out.set(r.ownerId, m);
  }
  return out;
}
