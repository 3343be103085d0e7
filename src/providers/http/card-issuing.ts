// The card-issuing port over the adapter protocol. A card number that fails the Luhn check is
// a malformed answer like any other.
import { HttpPort, ProviderError } from './client.ts';
import { isLuhnValid, type CardIssuer, type IssuedCard } from '../card-issuing.ts';

export class HttpCardIssuer extends HttpPort implements CardIssuer {
  async issue(opts: { reference: string; amount: number }): Promise<IssuedCard> {
    const { reference: _, ...card } = await this.adapter.call('issueCard', {
      type: 'Card',
      reference: opts.reference,
      amount: opts.amount,
    });
    if (!isLuhnValid(card.number))
      throw new ProviderError(
        'cardIssuer',
        `issueCard ${opts.reference}: malformed answer (the card number fails the Luhn check)`,
      );
    return card;
  }
}
