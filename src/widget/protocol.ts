// The messages between the merchant's page (main.js) and the widget frames on the widget host.
// Both sides send with an explicit target origin and check the sender's origin and window.
// The spec names ServicePay::WalletWidgetDataUpdated (page → frame) and
// ServicePay::PaymentIntentUpdated (frame → page); the others are ours, in the same namespace.

export const FLOWS = ['wallet-balance', 'wallet-rewards', 'wallet-payment-success', 'wallet'] as const;
export type Flow = (typeof FLOWS)[number];

export const MSG = {
  // page → frame
  WalletWidgetDataUpdated: 'ServicePay::WalletWidgetDataUpdated',
  StateUpdated: 'ServicePay::StateUpdated',
  UserData: 'ServicePay::UserData',
  PaymentIntentStarted: 'ServicePay::PaymentIntentStarted',
  PaymentIntentStartFailed: 'ServicePay::PaymentIntentStartFailed',
  /** The wallet changed (a payment was made): frames read their figures again. */
  Refresh: 'ServicePay::Refresh',
  // frame → page
  FrameReady: 'ServicePay::FrameReady',
  Resize: 'ServicePay::Resize',
  ApplyBalanceToggle: 'ServicePay::ApplyBalanceToggle',
  GoToWallet: 'ServicePay::GoToWallet',
  GetUserData: 'ServicePay::GetUserData',
  PaymentIntentStart: 'ServicePay::PaymentIntentStart',
  PaymentIntentUpdated: 'ServicePay::PaymentIntentUpdated',
} as const;

export interface Message<T = unknown> {
  type: string;
  data?: T;
}

export interface PageState {
  balanceApplied: boolean;
  hideBalanceToggle: boolean;
  /** The order is paid (main.js saw the intent promoted): the balance toggle is disabled. */
  paid?: boolean;
}

/** What onApplyBalanceToggle callbacks receive. */
export interface BalanceTogglePayload {
  applied: boolean;
  walletId: string;
  /** Cents of wallet balance applied to the purchase (0 when not applied). */
  appliedAmount: number;
  purchaseAmount: number | null;
}

export interface UserData {
  referenceId?: string;
  email?: string;
  phoneNumber?: string;
}

export interface PaymentIntentStart {
  walletId: string;
  amount: number;
  reference?: string;
  /** The intent the merchant's backend created (and authorized). */
  paymentIntentId: string;
}

export const isMessage = (v: unknown): v is Message =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as Message).type === 'string' &&
  (v as Message).type.startsWith('ServicePay::');
