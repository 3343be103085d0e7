// The group-commit queue's scheduling (db/groups.ts), with a `serve` that only records each
// group and ends it when the test says so: which requests go together, and which wait because a
// running group holds their row. What groups do in the database is tested through HTTP by each
// kind of group (authorize-groups.test.ts, capture-groups.test.ts, the deposit tests).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { groupCommit } from './groups.ts';
import type { Db } from './open.ts';

interface Req {
  name: string;
  row?: string;
}

function scheduler() {
  const groups: string[][] = [];
  const ends: (() => void)[] = [];
  const submit = groupCommit<Req, string>(
    (_db, members) => {
      groups.push(members.map((m) => m.name));
      return new Promise<void>((end) =>
        ends.push(() => {
          for (const m of members) m.resolve(m.name);
          end();
        }),
      );
    },
    { name: 'test', rowOf: (r) => r.row },
  );
  // The queue is per database; this one is only its key, never queried.
  const db = {} as Db;
  return { groups, ends, send: (...reqs: Req[]) => reqs.map((r) => submit(db, r)) };
}

/** Lets the queue's setImmediate and the groups' promise callbacks run. */
const turn = () => new Promise((r) => setImmediate(r));

describe('group commit scheduling', () => {
  test('a request whose row a running group holds waits for the next group; the others go at once', async () => {
    const s = scheduler();
    const first = s.send({ name: 'a1', row: 'A' }, { name: 'x', row: 'X' });
    await turn();
    assert.deepEqual(s.groups, [['a1', 'x']]);

    // A is held by the running group: a2 and a3 wait, in order; y and the request with no row go.
    const second = s.send(
      { name: 'a2', row: 'A' },
      { name: 'y', row: 'Y' },
      { name: 'a3', row: 'A' },
      { name: 'free' },
    );
    await turn();
    assert.deepEqual(s.groups, [
      ['a1', 'x'],
      ['y', 'free'],
    ]);

    // The first group ends: its row is free, and the waiting requests of A form the next group.
    s.ends[0]!();
    await turn();
    assert.deepEqual(s.groups, [
      ['a1', 'x'],
      ['y', 'free'],
      ['a2', 'a3'],
    ]);
    s.ends[1]!();
    s.ends[2]!();
    assert.deepEqual(await Promise.all([...first, ...second]), ['a1', 'x', 'a2', 'y', 'a3', 'free']);
  });

  test('with every waiting request held, no group starts until the holder ends, and rows are released', async () => {
    const s = scheduler();
    const done = s.send({ name: 'b1', row: 'B' });
    await turn();
    done.push(...s.send({ name: 'b2', row: 'B' }));
    await turn();
    // A slot is free, but b2's row is held: nothing starts.
    assert.deepEqual(s.groups, [['b1']]);
    s.ends[0]!();
    await turn();
    assert.deepEqual(s.groups, [['b1'], ['b2']]);
    s.ends[1]!();
    await turn();
    // Nothing holds B any more: a new request of B goes at once.
    done.push(...s.send({ name: 'b3', row: 'B' }));
    await turn();
    assert.deepEqual(s.groups, [['b1'], ['b2'], ['b3']]);
    s.ends[2]!();
    assert.deepEqual(await Promise.all(done), ['b1', 'b2', 'b3']);
  });
});
