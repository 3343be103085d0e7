// The write parts rows.ts makes are ordinary objects to V8: fast properties, one map per shape.
// An object literal with a `params` getter and the merge spread in after it became a dictionary
// with a map of its own for every row (`node --log-maps`: AccessorsOverwritingNonLast), on the
// write path of every deposit and payment. What the parts write is tested through the API
// (the money and payment tests) and by batch.test.ts's statements.
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { test } from 'node:test';
import { insertPart, updatePart } from './rows.ts';
import { clients, users } from './schema.ts';

setFlagsFromString('--allow-natives-syntax');
const fastProperties = new Function('o', 'return %HasFastProperties(o)') as (o: object) => boolean;
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

const now = new Date('2026-01-01T00:00:00Z');
const user = (n: number) => ({
  id: `01a23684-90bb-7bee-893b-8e76ef8e56${String(n).padStart(2, '0')}`,
  clientId: '01a23684-90bb-7bee-893b-8e76ef8e5600',
  publicId: `u_${n}`,
  phoneNumber: `+1555000${n}`,
  createdAt: now,
  updatedAt: now,
});
const client = (n: number) => ({
  id: `01a23684-90bb-7bee-893b-8e76ef8e57${String(n).padStart(2, '0')}`,
  name: `c${n}`,
  createdAt: now,
  updatedAt: now,
});

test('insert and update parts keep fast properties and share a map per shape, their merges too', () => {
  // Rows of two tables through the same lines, as a server's writes go.
  const parts = [
    insertPart(users, user(1)),
    insertPart(clients, client(1)),
    insertPart(users, user(2)),
    insertPart(clients, client(2)),
  ];
  const updates = [
    updatePart(users, user(1).id, { phoneNumber: '+15551111', updatedAt: now }),
    updatePart(users, user(2).id, { phoneNumber: '+15552222', updatedAt: now }),
  ];
  for (const p of [...parts, ...updates]) {
    assert.ok(fastProperties(p), `${p.name}: fast properties`);
    assert.ok(p.merge && fastProperties(p.merge), `${p.name}: its merge has fast properties`);
  }
  assert.ok(sameMap(parts[0]!, parts[2]!) && sameMap(parts[0]!, parts[1]!), 'one map for every part');
  assert.ok(sameMap(parts[0]!.merge!, parts[2]!.merge!), 'one map for the merges of a shape');
  assert.equal(parts[0]!.merge!.combine, parts[2]!.merge!.combine, 'one combine function per shape');
  assert.ok(sameMap(updates[0]!, updates[1]!), 'one map for the updates of a shape');
  // The parameters are still those of the row when it was made.
  assert.deepEqual(updates[0]!.params.slice(0, 2), [user(1).id, '+15551111']);
  const merged = parts[0]!.merge!.combine([parts[0]!.merge!.item, parts[2]!.merge!.item]);
  assert.deepEqual(merged.rows, [`users:${user(1).id}`, `users:${user(2).id}`]);
  assert.deepEqual(
    JSON.parse(merged.params[0] as string).map((r: { phone_number: string }) => r.phone_number),
    ['+15550001', '+15550002'],
  );
  const mergedUpdate = updates[0]!.merge!.combine([updates[0]!.merge!.item, updates[1]!.merge!.item]);
  assert.deepEqual(mergedUpdate.params[1], [user(1).id, user(2).id]);
  assert.deepEqual(
    JSON.parse(mergedUpdate.params[0] as string).map((r: { id: string; phone_number: string }) => [
      r.id,
      r.phone_number,
    ]),
    [
      [user(1).id, '+15551111'],
      [user(2).id, '+15552222'],
    ],
  );
});
