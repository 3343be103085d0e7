// Row ids (ids.ts): UUIDv7 strings, unique, in the order they were made (the primary keys rely on
// it to append), with random bits that do not repeat when the pool refills.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { uuidv7 } from './ids.ts';

describe('row ids', () => {
  test('UUIDv7 strings, unique and increasing across many pool refills, stamped with the time', () => {
    const before = Date.now();
    const ids = Array.from({ length: 20_000 }, () => uuidv7());
    const after = Date.now();
    for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(new Set(ids).size, ids.length);
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1]! < ids[i]!, `${ids[i - 1]} then ${ids[i]}`);
    const ms = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    assert.ok(ms(ids[0]!) >= before && ms(ids.at(-1)!) <= after);
    // The low 32 bits of each id are one draw from the pool of 1,024: had a refill given the same
    // draws again, an id would end as the one made a pool earlier does.
    const tail = (i: number) => ids[i]!.slice(-8);
    for (let i = 1024; i < ids.length; i++) assert.notEqual(tail(i), tail(i - 1024));
  });
});
