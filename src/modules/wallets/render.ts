import type { WalletBalance } from './balance.ts';
import type { BarcodeView, WalletRow } from './sql.ts';
import { isoTime, isoTimeOrNull } from '../../timestamps.ts';

export const walletPath = (id: string) => `/api/v1/wallets/${id}`;

export function walletResource(w: WalletRow, baseUrl: string) {
  return {
    id: w.id,
    type: 'Wallet' as const,
    attributes: {
      status: w.status as 'Active' | 'Closed',
      closedAt: isoTimeOrNull(w.closedAt),
      updatedAt: isoTime(w.updatedAt),
      createdAt: isoTime(w.createdAt),
    },
    relationships: { user: { data: { type: 'User' as const, id: w.userId } } },
    links: { self: baseUrl + walletPath(w.id) },
  };
}

export function walletBalanceResource(w: WalletRow, balance: WalletBalance, baseUrl: string) {
  const r = walletResource(w, baseUrl);
  return { ...r, attributes: { ...r.attributes, balance }, links: { self: `${baseUrl}${walletPath(w.id)}/balance` } };
}

/** `idOf: 'wallet'`: GET /simulation/barcodes/{lookUpId}, whose `id` Accrue documents as the wallet's. */
export function barcodeResource(b: BarcodeView, opts: { idOf?: 'barcode' | 'wallet' } = {}) {
  return {
    id: opts.idOf === 'wallet' ? b.walletId : b.id,
    type: 'WalletBarcode' as const,
    attributes: {
      lookUpId: b.lookUpId,
      walletId: b.walletId,
      expiresAt: isoTime(b.expiresAt),
      usageLimit: b.usageLimit,
      usageCount: b.usageCount,
      referenceId: b.referenceId,
      createdAt: isoTime(b.createdAt),
      updatedAt: isoTime(b.updatedAt),
    },
  };
}
