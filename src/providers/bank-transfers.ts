// Port to the ACH provider that moves money between Coffer and users' bank accounts. Calls
// carry Coffer's own reference as the provider's idempotency key, so a retried call (after a
// crash between the call and recording its answer) never moves money twice. The sandbox
// accepts every transfer at once; clearing and failure are simulated through the API.

export interface TransferRequest {
  /** Coffer's id for the transfer: the provider's idempotency key. */
  reference: string;
  amount: number;
  linkedAccountExternalId: string;
}

export interface BankTransferProvider {
  /** Starts pulling money from a linked account (a deposit). */
  initiatePull(r: TransferRequest): Promise<{ providerRef: string }>;
  /** Starts pushing money to a linked account (a withdrawal). */
  initiatePush(r: TransferRequest): Promise<{ providerRef: string }>;
}

export class SandboxBankTransfers implements BankTransferProvider {
  /** Every transfer accepted, by reference (a repeated reference is the same transfer). */
  readonly transfers = new Map<string, TransferRequest & { direction: 'pull' | 'push' }>();

  async initiatePull(r: TransferRequest) {
    this.transfers.set(r.reference, { ...r, direction: 'pull' });
    return { providerRef: `ach_pull_${r.reference}` };
  }

  async initiatePush(r: TransferRequest) {
    this.transfers.set(r.reference, { ...r, direction: 'push' });
    return { providerRef: `ach_push_${r.reference}` };
  }
}
