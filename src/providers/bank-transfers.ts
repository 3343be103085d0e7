// Port to the ACH provider that moves money between Coffer and users' bank accounts. Calls
// carry Coffer's own reference as the provider's idempotency key, so a retried call (after a
// crash between the call and recording its answer) never moves money twice. A provider that
// reports status is asked how each transfer ended (modules/bank-transfers). The sandbox accepts
// every transfer at once and reports nothing: clearing and failure are simulated through the
// API, and captured payments settle on their own.

/**
 * A bank account Coffer knows by its numbers rather than through the bank-linking provider: a
 * counterparty's (the merchant gave them when creating it). Opened from its sealed form only to
 * hand to the provider; never logged.
 */
export interface BankAccountNumbers {
  routingNumber: string;
  accountNumber: string;
  accountType: 'checking' | 'savings';
  /** The account holder as Coffer names it (the counterparty's label). */
  holderName: string;
}

/** A transfer to or from either a linked account (by the linking provider's id) or an account by its numbers. */
export type TransferRequest = {
  /** Coffer's id for the transfer: the provider's idempotency key. */
  reference: string;
  amount: number;
} & (
  | { linkedAccountExternalId: string; bankAccount?: undefined }
  | { bankAccount: BankAccountNumbers; linkedAccountExternalId?: undefined }
);

export interface TransferOutcome {
  status: 'pending' | 'settled' | 'failed';
  /** Why a failed transfer failed (an ACH return code and its meaning, say). */
  failureReason?: string;
}

export interface BankTransferProvider {
  /** Whether the provider reports how transfers end (status); the sandbox does not. */
  readonly reportsStatus: boolean;
  /** Starts pulling money from a linked account (a deposit, a payment's bank part). */
  initiatePull(r: TransferRequest): Promise<{ providerRef: string }>;
  /** Starts pushing money to an account (a withdrawal to a linked account, a counterparty's payout to its numbers). */
  initiatePush(r: TransferRequest): Promise<{ providerRef: string }>;
  /** Where a transfer it accepted stands. */
  status(reference: string): Promise<TransferOutcome>;
}

export class SandboxBankTransfers implements BankTransferProvider {
  readonly reportsStatus = false;
  /**
   * The transfers accepted most recently, by reference, for tests to inspect; the oldest are
   * forgotten past `keep` so that a long-running sandbox does not grow. The provider's answer
   * is derived from the reference alone, so a repeated reference is the same transfer whether
   * or not it is still remembered.
   */
  readonly transfers = new Map<string, TransferRequest & { direction: 'pull' | 'push' }>();
  readonly #keep: number;

  constructor(opts: { keep?: number } = {}) {
    this.#keep = opts.keep ?? 10_000;
  }

  async initiatePull(r: TransferRequest) {
    this.#remember(r, 'pull');
    return { providerRef: `ach_pull_${r.reference}` };
  }

  async initiatePush(r: TransferRequest) {
    this.#remember(r, 'push');
    return { providerRef: `ach_push_${r.reference}` };
  }

  /** Never asked (reportsStatus is false): the sandbox's transfers end through the simulations. */
  async status(): Promise<TransferOutcome> {
    return { status: 'pending' };
  }

  #remember(r: TransferRequest, direction: 'pull' | 'push'): void {
    this.transfers.delete(r.reference);
    this.transfers.set(r.reference, Object.assign({ direction }, r));
    while (this.transfers.size > this.#keep) this.transfers.delete(this.transfers.keys().next().value!);
  }
}
