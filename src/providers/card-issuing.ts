// Port to the card issuer that creates single-use virtual debit cards. Issuing is idempotent
// by reference: asked again for the same reference (a retry after a crash), an issuer returns
// the same card. The sandbox issues Luhn-valid numbers in a test range (BIN 400000), valid
// three years, derived from the reference with a keyed hash, so it needs no storage.
import { createHmac, hkdfSync } from 'node:crypto';

export interface IssuedCard {
  number: string;
  expirationMonth: number;
  expirationYear: number;
  cvc: string;
}

export interface CardIssuer {
  /** A card for `amount` cents; a repeated reference is the same card. */
  issue(opts: { reference: string; amount: number; now: Date }): Promise<IssuedCard>;
}

/** The Luhn check digit for a number missing it. */
function luhnCheckDigit(partial: string): number {
  let sum = 0;
  for (let i = 0; i < partial.length; i++) {
    let d = Number(partial[partial.length - 1 - i]);
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return (10 - (sum % 10)) % 10;
}

export function isLuhnValid(number: string): boolean {
  return /^\d{12,19}$/.test(number) && luhnCheckDigit(number.slice(0, -1)) === Number(number.at(-1));
}

export class SandboxCardIssuer implements CardIssuer {
  readonly #key: Buffer;

  /** `secret`: the deployment's card key (a key for this use is derived from it). */
  constructor(secret: Buffer) {
    this.#key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'coffer:sandbox-card-issuer', 32));
  }

  async issue(opts: { reference: string; amount?: number; now: Date }): Promise<IssuedCard> {
    const digest = createHmac('sha256', this.#key).update(opts.reference).digest();
    const digits = (BigInt(`0x${digest.toString('hex')}`) % 10n ** 12n).toString().padStart(12, '0');
    const body = `400000${digits.slice(0, 9)}`;
    return {
      number: body + luhnCheckDigit(body),
      expirationMonth: opts.now.getUTCMonth() + 1,
      expirationYear: opts.now.getUTCFullYear() + 3,
      cvc: digits.slice(9, 12),
    };
  }
}
