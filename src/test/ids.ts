// UUIDv7 ids of a chosen time, for tests of what the ids' time decides (the events' weekly
// partitions): the app's own ids always carry the real clock's time (src/ids.ts).
import { randomInt } from 'node:crypto';
import { UUID } from 'uuidv7';

/** A UUIDv7 made at `ms` (milliseconds since the epoch), with random bits. */
export const uuidv7At = (ms: number): string =>
  UUID.fromFieldsV7(ms, randomInt(0x1000), randomInt(0x40000000), randomInt(2 ** 32 - 1)).toString();
