// The sandbox bank remembers only its most recent transfers (a long-running sandbox must not
// grow), and a repeated reference is still the same transfer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxBankTransfers } from './bank-transfers.ts';

test('the sandbox bank forgets its oldest transfers past its limit; answers depend only on the reference', async () => {
  const bank = new SandboxBankTransfers({ keep: 3 });
  const refs = [];
  for (const reference of ['a', 'b', 'c', 'd'])
    refs.push((await bank.initiatePull({ reference, amount: 100, linkedAccountExternalId: 'x' })).providerRef);
  assert.deepEqual([...bank.transfers.keys()], ['b', 'c', 'd']);
  assert.equal(
    (await bank.initiatePull({ reference: 'a', amount: 100, linkedAccountExternalId: 'x' })).providerRef,
    refs[0],
  );
  // A repeated reference is the newest again.
  await bank.initiatePush({ reference: 'c', amount: 5, linkedAccountExternalId: 'y' });
  assert.deepEqual([...bank.transfers.keys()], ['d', 'a', 'c']);
  assert.equal(bank.transfers.get('c')?.direction, 'push');
});
