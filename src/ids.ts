// Row ids: UUIDv7 (time-ordered, so new rows go to the end of each primary-key index), made by
// the uuidv7 library with its random bits drawn from a pool refilled 4 KB at a time. The
// library's default source asks crypto.getRandomValues for 32 bytes every few ids, and each such
// call cost microseconds in the server, which makes about ten ids per authorize. Same generator, same monotonic order within a
// millisecond, the same cryptographic source; only fewer calls to it.
import { randomFillSync } from 'node:crypto';
import { V7Generator } from 'uuidv7';

class PooledRandom {
  #pool = new Uint32Array(1024);
  #next = this.#pool.length;

  nextUint32(): number {
    if (this.#next === this.#pool.length) {
      randomFillSync(this.#pool);
      this.#next = 0;
    }
    return this.#pool[this.#next++]!;
  }
}

const generator = new V7Generator(new PooledRandom());

/** A new UUIDv7 as its canonical string. */
export const uuidv7 = (): string => generator.generate().toString();
