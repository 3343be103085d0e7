// Encryption at rest for values the service must read back (webhook signing secrets, card
// data, bank account numbers). AES-256-GCM with a key per purpose, derived by HKDF-SHA256 from
// a master key (CARD_ENCRYPTION_KEY).
//
// Format v2: "v2.<kid>.<iv>.<ciphertext>.<tag>" (base64url parts). The associated data binds the
// purpose and the value's place (a context such as "webhooks:<id>"), so a value copied into
// another row or column does not open. <kid> names the master key (the first four bytes of
// its SHA-256, hex): the current key seals, earlier keys (CARD_ENCRYPTION_OLD_KEYS) still open
// what they sealed, and the re-seal job (db/reseal.ts) moves old values to the current key.
// The tag must be the full 16 bytes.
//
// Format v1 ("v1.<iv>.<ciphertext>.<tag>", the purpose alone as associated data, no key id)
// still opens, with any key of the ring; the re-seal job rewrites it as v2.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

export type SealPurpose = 'webhook-secret' | 'card' | 'bank-account';

const TAG_BYTES = 16;
const IV_BYTES = 12;

/** The id a sealed value names its master key by. */
export const keyIdOf = (masterKey: Buffer) =>
  createHash('sha256').update(masterKey).digest().subarray(0, 4).toString('hex');

class MasterKey {
  readonly #derived = new Map<SealPurpose, Buffer>();
  constructor(
    readonly id: string,
    readonly bytes: Buffer,
  ) {}

  forPurpose(purpose: SealPurpose): Buffer {
    let key = this.#derived.get(purpose);
    if (!key) {
      key = Buffer.from(hkdfSync('sha256', this.bytes, Buffer.alloc(0), `coffer:${purpose}`, 32));
      this.#derived.set(purpose, key);
    }
    return key;
  }
}

export class Sealer {
  readonly #current: MasterKey;
  /** Every key by id, the current one first. */
  readonly #ring = new Map<string, MasterKey>();

  constructor(currentKey: Buffer, oldKeys: Buffer[] = []) {
    for (const bytes of [currentKey, ...oldKeys]) {
      if (bytes.length !== 32) throw new Error('an encryption key must be 32 bytes');
      const id = keyIdOf(bytes);
      const known = this.#ring.get(id);
      if (known && !known.bytes.equals(bytes))
        throw new Error(`two encryption keys share the id ${id}; generate another`);
      if (!known) this.#ring.set(id, new MasterKey(id, bytes));
    }
    this.#current = this.#ring.get(keyIdOf(currentKey))!;
  }

  /** The id of the key that seals. */
  get keyId(): string {
    return this.#current.id;
  }

  /** What every value sealed in the current format with the current key starts with. */
  get currentPrefix(): string {
    return `v2.${this.#current.id}.`;
  }

  /** `context` names where the value is kept (`webhooks:<id>`); open() must be given the same. */
  seal(plaintext: string | Buffer, purpose: SealPurpose, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#current.forPurpose(purpose), iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(associatedData(purpose, context));
    const ct = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return [
      'v2',
      this.#current.id,
      iv.toString('base64url'),
      ct.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
    ].join('.');
  }

  open(sealed: string, purpose: SealPurpose, context: string): Buffer {
    const parts = sealed.split('.');
    if (parts[0] === 'v2' && parts.length === 5) {
      const key = this.#ring.get(parts[1]!);
      if (!key)
        throw new Error(
          `sealed with key ${parts[1]}, which is not configured (CARD_ENCRYPTION_KEY or CARD_ENCRYPTION_OLD_KEYS)`,
        );
      return decrypt(key.forPurpose(purpose), parts[2]!, parts[3]!, parts[4]!, associatedData(purpose, context));
    }
    if (parts[0] === 'v1' && parts.length === 4) {
      // v1 named no key: whichever key of the ring sealed it opens it.
      let failure: unknown;
      for (const key of this.#ring.values()) {
        try {
          return decrypt(key.forPurpose(purpose), parts[1]!, parts[2]!, parts[3]!, Buffer.from(purpose));
        } catch (err) {
          failure = err;
        }
      }
      throw failure;
    }
    throw new Error('not a sealed value');
  }
}

const associatedData = (purpose: SealPurpose, context: string) => Buffer.from(`coffer:v2:${purpose}:${context}`);

function decrypt(key: Buffer, iv: string, ct: string, tag: string, aad: Buffer): Buffer {
  const ivBytes = Buffer.from(iv, 'base64url');
  const tagBytes = Buffer.from(tag, 'base64url');
  // GCM would accept a tag as short as 4 bytes, which a forger can guess.
  if (ivBytes.length !== IV_BYTES || tagBytes.length !== TAG_BYTES) throw new Error('not a sealed value');
  const decipher = createDecipheriv('aes-256-gcm', key, ivBytes, { authTagLength: TAG_BYTES });
  decipher.setAAD(aad);
  decipher.setAuthTag(tagBytes);
  return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]);
}
