// The card-processor port over the adapter protocol. The adapter answers a repeated reference
// with its first answer, so a retried authorization never charges twice.
import { HttpPort } from './client.ts';
import type { CardProcessor, ProcessorAnswer, ProcessorRequest } from '../card-processor.ts';

export class HttpCardProcessor extends HttpPort implements CardProcessor {
  async authorize(r: ProcessorRequest): Promise<ProcessorAnswer> {
    const { approved, code, data } = await this.adapter.call('authorizeCard', {
      type: 'CardAuthorization',
      reference: r.reference,
      clientId: r.clientId,
      amount: r.amount,
      ...(r.meta ? { meta: r.meta } : {}),
    });
    return { approved, code, data };
  }
}
