// Stored digests outlive the code that wrote them: a client secret's hash authenticates every
// later request, and an idempotency key's fingerprint decides whether a retry replays its first
// answer (docs/adr/0004-idempotency-in-the-database.md). Both must stay SHA-256 of the same bytes, whatever call computes them;
// the expected values come from `sha256sum`, not from Node.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hashSecret } from '../modules/clients/domain.ts';
import { fingerprintOf } from './idempotency.ts';

test('a secret is stored as the SHA-256 of its UTF-8 bytes', () => {
  assert.equal(
    hashSecret('sk_sandbox_pinned-secret').toString('hex'),
    '59d05d7484fffdaf29c76dcdc186aa428e518267f313f7dc130ae60c644b5466',
  );
});

test('a fingerprint is the SHA-256 of the canonical JSON, keys sorted and undefined members left out', () => {
  assert.equal(
    fingerprintOf(['w', { linkedAccountId: 'la', amount: 1000, note: undefined }]),
    'c4a3490d15ce62c2b75d20383b382581634fecddd2d2f734f355ec6610ff1c05',
  );
});
