// Port to the card issuer that creates single-use virtual debit cards. The sandbox issues
// Luhn-valid numbers in a test range (BIN 400000), valid three years.
import { randomInt } from 'node:crypto';

export interface IssuedCard {
  number: string;
  expirationMonth: number;
  expirationYear: number;
  cvc: string;
}

export interface CardIssuer {
  issue(opts: { reference: string; now: Date }): Promise<IssuedCard>;
}

/** The Luhn check digit for a number missing it. */
export function luhnCheckDigit(partial: string): number {
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
  async issue(opts: { now: Date }): Promise<IssuedCard> {
    const body = `400000${Array.from({ length: 9 }, () => randomInt(0, 10)).join('')}`;
    return {
      number: body + luhnCheckDigit(body),
      expirationMonth: opts.now.getUTCMonth() + 1,
      expirationYear: opts.now.getUTCFullYear() + 3,
      cvc: String(randomInt(0, 1000)).padStart(3, '0'),
    };
  }
}
