// Encryption at rest for values the service must read back (webhook signing secrets, card
// data). AES-256-GCM with a key per purpose, derived by HKDF-SHA256 from CARD_ENCRYPTION_KEY,
// and the purpose bound in as associated data: a value sealed for one purpose does not open as
// another. Format: "v1.<iv>.<ciphertext>.<tag>" in base64url.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

export type SealPurpose = 'webhook-secret' | 'card' | 'bank-account';

export class Sealer {
  readonly #keys = new Map<SealPurpose, Buffer>();
  readonly #master: Buffer;

  constructor(masterKey: Buffer) {
    if (masterKey.length !== 32) throw new Error('the encryption key must be 32 bytes');
    this.#master = masterKey;
  }

  seal(plaintext: string | Buffer, purpose: SealPurpose): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key(purpose), iv);
    cipher.setAAD(Buffer.from(purpose));
    const ct = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return ['v1', iv.toString('base64url'), ct.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
  }

  open(sealed: string, purpose: SealPurpose): Buffer {
    const [version, iv, ct, tag] = sealed.split('.');
    if (version !== 'v1' || !iv || ct === undefined || !tag) throw new Error('not a sealed value');
    const decipher = createDecipheriv('aes-256-gcm', this.#key(purpose), Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(purpose));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]);
  }

  #key(purpose: SealPurpose): Buffer {
    let key = this.#keys.get(purpose);
    if (!key) {
      key = Buffer.from(hkdfSync('sha256', this.#master, Buffer.alloc(0), `coffer:${purpose}`, 32));
      this.#keys.set(purpose, key);
    }
    return key;
  }
}
