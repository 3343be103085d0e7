// The bank-transfers port over the adapter protocol: transfers are started with Coffer's
// reference as the idempotency key, and the adapter reports how each ended.
import { HttpPort } from './client.ts';
import type { BankTransferProvider, TransferOutcome, TransferRequest } from '../bank-transfers.ts';

export class HttpBankTransfers extends HttpPort implements BankTransferProvider {
  readonly reportsStatus = true;

  initiatePull(r: TransferRequest): Promise<{ providerRef: string }> {
    return this.#start(r, 'pull');
  }

  initiatePush(r: TransferRequest): Promise<{ providerRef: string }> {
    return this.#start(r, 'push');
  }

  async status(reference: string): Promise<TransferOutcome> {
    const { status, failureReason } = await this.adapter.call('getBankTransfer', { reference });
    return { status, ...(failureReason ? { failureReason } : {}) };
  }

  async #start(r: TransferRequest, direction: 'pull' | 'push'): Promise<{ providerRef: string }> {
    const account = r.bankAccount ? { bankAccount: r.bankAccount } : { accountId: r.linkedAccountExternalId };
    const answer = await this.adapter.call('createBankTransfer', {
      type: 'BankTransfer',
      reference: r.reference,
      direction,
      amount: r.amount,
      ...account,
    });
    return { providerRef: answer.providerRef };
  }
}
