// Identity verification (spec "Identity verification challenge", "Users and identity" rules 2
// to 4; docs/identity.md#challenges-in-detail): every row of the challenge state table, every error code, the token,
// the verified profile change, with time moved by the test clock.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { rowsOf } from '../../db/open.ts';
import { users } from '../../db/schema.ts';
import {
  createTestApp,
  createUser,
  errorsOf,
  logCapture,
  phone,
  uniqueEmail,
  type Merchant,
  type TestApp,
} from '../../test/harness.ts';
import { approvedUser, clearPending, createWallet, deposit, linkAccount } from '../../test/money.ts';
import { amountLabel, dateLabel, generateChallenge } from './questions.ts';

const MINUTE = 60_000;
const RIGHT = { name: 'Ada Lovelace', dob: dateLabel('1990-12-10'), mask: '4321' };

type Challenge = {
  id: string;
  type: string;
  attributes: {
    challengeId: string;
    expiresAt: string;
    questions: { id: string; prompt: string; options: { id: string; label: string }[] }[];
  };
};

/** Answers picking, for each question, the option whose label is one of `labels` (else the first wrong one). */
function answersFor(c: Challenge, labels: string[], wrong: string[] = []) {
  return c.attributes.questions.map((q) => {
    const pick = wrong.some((w) => q.prompt.includes(w))
      ? q.options.find((o) => !labels.includes(o.label))!
      : q.options.find((o) => labels.includes(o.label));
    assert.ok(pick, `no option for "${q.prompt}" among ${JSON.stringify(q.options)}`);
    return { questionId: q.id, optionId: pick.id };
  });
}

const submission = (answers: { questionId: string; optionId: string }[]) => ({
  data: { type: 'IdentityVerificationSubmission', attributes: { answers } },
});
const profileUpdate = (attributes: Record<string, unknown>) => ({ data: { type: 'ProfileUpdate', attributes } });

describe('identity verification', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  const { stream: logStream, lines: logs } = logCapture();
  before(async () => {
    t = await createTestApp({ logStream });
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  /** A user who can be challenged: KYC'd (name Ada Lovelace, born 1990-12-10), account ending 4321, a wallet. */
  async function verifiable(as = m) {
    const user = await approvedUser(t, as);
    const account = await linkAccount(t, as, user.id, { accountMask: '4321', institutionName: 'Chase' });
    const wallet = await createWallet(t, as, user.id);
    return { user, account, wallet };
  }

  const base = (id: string) => `/api/v1/users/${encodeURIComponent(id)}/identity-verification`;
  const create = (id: string, as = m) => t.request('POST', `${base(id)}/challenges`, { as });
  const submit = (id: string, challengeId: string, answers: { questionId: string; optionId: string }[], as = m) =>
    t.request('POST', `${base(id)}/challenges/${challengeId}/submissions`, { as, body: submission(answers) });
  const update = (id: string, attributes: Record<string, unknown>, as = m) =>
    t.request('POST', `${base(id)}/profile-updates`, { as, body: profileUpdate(attributes) });

  async function challenge(id: string): Promise<Challenge> {
    const res = await create(id);
    assert.equal(res.status, 200, res.raw);
    return res.body.data;
  }

  async function passedToken(id: string): Promise<string> {
    const c = await challenge(id);
    const res = await submit(id, c.id, answersFor(c, Object.values(RIGHT)));
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.attributes.passed, true, res.raw);
    return res.body.data.attributes.verificationToken;
  }

  const errorCode = (res: { status: number; body: unknown; raw: string }) => errorsOf(res as never)[0]!.code;

  describe('create challenge', () => {
    test('(none) → pending: three questions of four options, one right each, expiring in 30 minutes', async () => {
      const { user } = await verifiable();
      const res = await create(user.id);
      assert.equal(res.status, 200, res.raw);
      const c = res.body.data as Challenge;
      assert.equal(c.type, 'IdentityVerificationChallenge');
      assert.equal(c.attributes.challengeId, c.id);
      assert.equal(c.attributes.expiresAt, new Date(t.clock.now().getTime() + 30 * MINUTE).toISOString());
      assert.equal(c.attributes.questions.length, 3);
      const prompts = c.attributes.questions.map((q) => q.prompt).join(' | ');
      assert.match(prompts, /full name/);
      assert.match(prompts, /date of birth/);
      assert.match(prompts, /last 4 digits of your Chase account/);
      for (const q of c.attributes.questions) {
        assert.match(q.id, /^q_[0-9a-f]{20}$/);
        assert.equal(q.options.length, 4);
        assert.equal(new Set(q.options.map((o) => o.label)).size, 4, 'options are distinct');
        for (const o of q.options) assert.match(o.id, /^opt_[0-9a-f]{20}$/);
        assert.equal(
          q.options.filter((o) => Object.values(RIGHT).includes(o.label)).length,
          1,
          `one right option in ${JSON.stringify(q)}`,
        );
      }
      assert.ok(!res.raw.includes('answerKey') && !res.raw.includes('correct'), 'no answer key in the response');
    });

    test('pending → pending: called again before expiry returns the same challenge, by id or by reference id', async () => {
      const { user } = await verifiable();
      const ref = `ref-${user.id.slice(0, 8)}`;
      assert.equal(
        (
          await t.request('PATCH', `/api/v1/users/${user.id}/attached-profile`, {
            as: m,
            body: { data: { type: 'AttachedProfile', attributes: { referenceId: ref } } },
          })
        ).status,
        200,
      );
      const first = await create(user.id);
      t.clock.advance(30 * MINUTE - 1);
      const again = await create(ref);
      assert.equal(again.status, 200);
      assert.deepEqual(again.body.data.attributes, first.body.data.attributes);
      t.clock.advance(1);
      const next = await create(user.id);
      assert.notEqual(next.body.data.id, first.body.data.id, 'a lapsed challenge is replaced');
    });

    test('concurrent creates agree on one challenge', async () => {
      const { user } = await verifiable();
      const all = await Promise.all(Array.from({ length: 8 }, () => create(user.id)));
      assert.deepEqual(new Set(all.map((r) => r.status)), new Set([200]));
      assert.equal(new Set(all.map((r) => r.body.data.id)).size, 1);
    });

    test('403 InsufficientVerificationData without an active wallet, a full name or a date of birth', async () => {
      const noWallet = await approvedUser(t, m);
      await linkAccount(t, m, noWallet.id);
      let res = await create(noWallet.id);
      assert.equal(res.status, 403);
      assert.equal(errorCode(res), 'InsufficientVerificationData');
      assert.match(errorsOf(res)[0]!.detail, /wallet/);

      const noName = await createUser(t, m);
      await createWallet(t, m, noName.id);
      res = await create(noName.id);
      assert.equal(res.status, 403);
      assert.match(errorsOf(res)[0]!.detail, /name/);

      const noBirthDate = await createUser(t, m, { firstName: 'Grace', lastName: 'Hopper' });
      await createWallet(t, m, noBirthDate.id);
      res = await create(noBirthDate.id);
      assert.equal(res.status, 403);
      assert.equal(errorCode(res), 'InsufficientVerificationData');
      assert.match(errorsOf(res)[0]!.detail, /date of birth/);
    });

    test('with no account linked, the third question is a deposit cleared in the last 90 days; with neither, 403', async () => {
      const user = await approvedUser(t, m);
      const account = await linkAccount(t, m, user.id);
      const wallet = await createWallet(t, m, user.id);
      assert.equal((await deposit(t, m, wallet.id, 2_500, account.id)).status, 201);
      await clearPending(t, m, wallet.id);
      assert.equal(
        (await t.request('DELETE', `/api/v1/users/${user.id}/linked-accounts/${account.id}`, { as: m })).status,
        204,
      );

      const c = await challenge(user.id);
      const q = c.attributes.questions.find((x) => x.prompt.includes('deposit'));
      assert.ok(q, JSON.stringify(c.attributes.questions.map((x) => x.prompt)));
      assert.equal(q.options.filter((o) => o.label === amountLabel(2_500)).length, 1);
      const pass = await submit(user.id, c.id, answersFor(c, [RIGHT.name, RIGHT.dob, amountLabel(2_500)]));
      assert.equal(pass.body.data.attributes.passed, true, pass.raw);

      t.clock.advance(91 * 24 * 60 * MINUTE);
      const res = await create(user.id);
      assert.equal(res.status, 403);
      assert.equal(errorCode(res), 'InsufficientVerificationData');
    });

    test("an unknown identifier or another merchant's user is 404 UserNotFound; a reference id of two users is 400 ValidationError", async () => {
      const { user } = await verifiable();
      for (const [id, as] of [
        [crypto.randomUUID(), m],
        ['no-such-reference', m],
        [user.id, other],
      ] as const) {
        const res = await create(id, as);
        assert.equal(res.status, 404, id);
        assert.equal(errorCode(res), 'UserNotFound');
      }
      // The API keeps reference ids unique across both columns; rows from an import need not be.
      const twin = await verifiable();
      const dup = `dup-${user.id.slice(0, 8)}`;
      await t.ctx.db.update(users).set({ referenceId: dup }).where(eq(users.id, user.id));
      await t.ctx.db.update(users).set({ stableReferenceId: dup }).where(eq(users.id, twin.user.id));
      const res = await create(dup);
      assert.equal(res.status, 400);
      assert.equal(errorCode(res), 'ValidationError');
    });
  });

  describe('submit', () => {
    test('pending → passed: all right issues a pvt_ token valid 10 minutes, shown once', async () => {
      const { user } = await verifiable();
      const c = await challenge(user.id);
      const res = await submit(user.id, c.id, answersFor(c, Object.values(RIGHT)));
      assert.equal(res.status, 200, res.raw);
      const r = res.body.data;
      assert.equal(r.type, 'IdentityVerificationResult');
      assert.equal(r.attributes.passed, true);
      assert.match(r.attributes.verificationToken, /^pvt_[0-9a-f]{64}$/);
      assert.equal(r.attributes.expiresAt, new Date(t.clock.now().getTime() + 10 * MINUTE).toISOString());
      assert.equal(r.attributes.failureReason, null);
      const stored = await t.ctx.db.execute(sql`select token_hash from identity_challenges where id = ${c.id}`);
      assert.ok(
        !JSON.stringify(stored).includes(r.attributes.verificationToken.slice(4)),
        'the token is stored only as a hash',
      );
      // passed: any further submission is 400 ChallengeFailed; a new challenge can be created.
      const again = await submit(user.id, c.id, answersFor(c, Object.values(RIGHT)));
      assert.equal(again.status, 400);
      assert.equal(errorCode(again), 'ChallengeFailed');
      assert.ok(!again.raw.includes('pvt_'));
      assert.notEqual((await challenge(user.id)).id, c.id);
    });

    test('pending → pending on a wrong answer, → failed with MaxAttemptsExceeded on the third; then ChallengeFailed and an hour of CooldownActive', async () => {
      const { user } = await verifiable();
      const c = await challenge(user.id);
      const wrong = answersFor(c, Object.values(RIGHT), ['date of birth']);
      for (const remaining of [2, 1]) {
        const res = await submit(user.id, c.id, wrong);
        assert.equal(res.status, 200);
        assert.deepEqual(
          {
            passed: res.body.data.attributes.passed,
            failureReason: res.body.data.attributes.failureReason,
            expiresAt: res.body.data.attributes.expiresAt,
          },
          { passed: false, failureReason: 'IncorrectAnswer', expiresAt: null },
        );
        assert.equal(res.body.data.meta.attemptsRemaining, remaining);
        assert.equal(res.body.data.attributes.verificationToken, null, 'present (Accrue requires it), null');
        t.clock.advance(MINUTE);
      }
      const third = await submit(user.id, c.id, wrong);
      assert.equal(third.status, 200);
      assert.equal(third.body.data.attributes.passed, false);
      assert.equal(third.body.data.attributes.failureReason, 'MaxAttemptsExceeded');
      assert.equal(third.body.data.meta.attemptsRemaining, 0);
      const failedAt = t.clock.now().getTime();

      const fourth = await submit(user.id, c.id, answersFor(c, Object.values(RIGHT)));
      assert.equal(fourth.status, 400);
      assert.equal(errorCode(fourth), 'ChallengeFailed');

      t.clock.advance(60 * MINUTE - 1);
      const blocked = await create(user.id);
      assert.equal(blocked.status, 400);
      const e = errorsOf(blocked)[0]!;
      assert.equal(e.code, 'CooldownActive');
      assert.equal(e.meta.retryAfter, new Date(failedAt + 60 * MINUTE).toISOString());
      assert.equal(blocked.headers['retry-after'], '1');
      t.clock.advance(1);
      const fresh = await create(user.id);
      assert.equal(fresh.status, 200, fresh.raw);
      assert.notEqual(fresh.body.data.id, c.id);
    });

    test('a wrong then a right answer passes', async () => {
      const { user } = await verifiable();
      const c = await challenge(user.id);
      assert.equal(
        (await submit(user.id, c.id, answersFor(c, Object.values(RIGHT), ['full name']))).body.data.attributes
          .failureReason,
        'IncorrectAnswer',
      );
      assert.equal(
        (await submit(user.id, c.id, answersFor(c, Object.values(RIGHT)))).body.data.attributes.passed,
        true,
      );
    });

    test('pending → failed with ChallengeExpired when submitted after expiry, even with right answers; cooldown follows', async () => {
      const { user } = await verifiable();
      const c = await challenge(user.id);
      t.clock.advance(30 * MINUTE);
      const res = await submit(user.id, c.id, answersFor(c, Object.values(RIGHT)));
      assert.equal(res.status, 200);
      assert.equal(res.body.data.attributes.passed, false);
      assert.equal(res.body.data.attributes.failureReason, 'ChallengeExpired');
      assert.equal(res.body.data.attributes.verificationToken, null);
      assert.equal(errorCode(await submit(user.id, c.id, answersFor(c, Object.values(RIGHT)))), 'ChallengeFailed');
      const blocked = await create(user.id);
      assert.equal(errorCode(blocked), 'CooldownActive');
      assert.equal(
        errorsOf(blocked)[0]!.meta.retryAfter,
        new Date(t.clock.now().getTime() + 60 * MINUTE).toISOString(),
      );
    });

    test('a challenge that lapsed unanswered and was replaced is 400 ChallengeExpired, with no cooldown', async () => {
      const { user } = await verifiable();
      const old = await challenge(user.id);
      t.clock.advance(31 * MINUTE);
      const fresh = await challenge(user.id);
      const res = await submit(user.id, old.id, answersFor(old, Object.values(RIGHT)));
      assert.equal(res.status, 400);
      assert.equal(errorCode(res), 'ChallengeExpired');
      assert.equal(
        (await submit(user.id, fresh.id, answersFor(fresh, Object.values(RIGHT)))).body.data.attributes.passed,
        true,
      );
    });

    test('unknown question or option ids, a repeated or missing question are 400 ValidationError and use no attempt', async () => {
      const { user } = await verifiable();
      const c = await challenge(user.id);
      const right = answersFor(c, Object.values(RIGHT));
      const [a, b, d] = right as [(typeof right)[0], (typeof right)[0], (typeof right)[0]];
      const cases: [typeof right, string][] = [
        [[{ questionId: 'q_nope', optionId: a.optionId }, b, d], '/data/attributes/answers/0/questionId'],
        [[a, { questionId: b.questionId, optionId: 'opt_nope' }, d], '/data/attributes/answers/1/optionId'],
        [[a, b, { questionId: d.questionId, optionId: a.optionId }], '/data/attributes/answers/2/optionId'],
        [[a, b, a], '/data/attributes/answers/2/questionId'],
        [[a, b], '/data/attributes/answers'],
      ];
      for (const [answers, pointer] of cases) {
        const res = await submit(user.id, c.id, answers);
        assert.equal(res.status, 400, res.raw);
        assert.equal(errorCode(res), 'ValidationError');
        assert.equal(errorsOf(res)[0]!.source?.pointer, pointer);
      }
      const malformed = await t.request('POST', `${base(user.id)}/challenges/${c.id}/submissions`, {
        as: m,
        body: submission([{ questionId: a.questionId } as never]),
      });
      assert.equal(malformed.status, 400);
      assert.equal(errorCode(malformed), 'ValidationError');
      const res = await submit(user.id, c.id, right);
      assert.equal(res.body.data.attributes.passed, true, 'invalid submissions used no attempt');
    });

    test("an unknown, malformed or another user's challenge id is 400 ChallengeNotFound", async () => {
      const { user } = await verifiable();
      const second = await verifiable();
      const c = await challenge(user.id);
      for (const [id, challengeId] of [
        [user.id, crypto.randomUUID()],
        [user.id, 'not-a-challenge'],
        [second.user.id, c.id],
      ] as const) {
        const res = await submit(id, challengeId, answersFor(c, Object.values(RIGHT)));
        assert.equal(res.status, 400, `${id} ${challengeId}`);
        assert.equal(errorCode(res), 'ChallengeNotFound');
      }
    });

    test('the right option is not derivable: positions and ranks vary, ids say nothing', () => {
      const positions = new Map<string, Set<number>>();
      const ranks = new Map<string, Set<number>>();
      for (let i = 0; i < 200; i++) {
        const g = generateChallenge({
          firstName: 'Ada',
          lastName: 'Lovelace',
          dateOfBirth: '1990-12-10',
          fact:
            i % 2
              ? { kind: 'accountMask', mask: '4321', institutionName: 'Chase', otherMasks: [] }
              : { kind: 'depositAmount', amount: 2_500, otherAmounts: [] },
          now: new Date('2026-06-01T00:00:00Z'),
        });
        g.questions.forEach((q) => {
          const kind = q.prompt.split(' ').slice(-2).join(' ');
          const right = q.options.findIndex((o) => o.id === g.answerKey[q.id]);
          if (!positions.has(kind)) positions.set(kind, new Set());
          positions.get(kind)!.add(right);
          if (/birth|deposit/.test(q.prompt)) {
            const value = (label: string) =>
              /birth/.test(q.prompt) ? Date.parse(label) : Number(label.replace(/[$,]/g, ''));
            const sorted = q.options.map((o) => value(o.label)).sort((x, y) => x - y);
            const rank = sorted.indexOf(value(q.options[right]!.label));
            ranks.set(q.prompt, (ranks.get(q.prompt) ?? new Set()).add(rank));
          }
        });
      }
      for (const [kind, seen] of positions)
        assert.deepEqual([...seen].sort(), [0, 1, 2, 3], `position of the right ${kind}`);
      for (const [prompt, seen] of ranks)
        assert.deepEqual([...seen].sort(), [0, 1, 2, 3], `rank of the right value in "${prompt}"`);
      const order = new Set<string>();
      for (let i = 0; i < 30; i++) {
        const g = generateChallenge({
          firstName: 'Ada',
          lastName: 'Lovelace',
          dateOfBirth: '1990-12-10',
          fact: { kind: 'accountMask', mask: '4321', institutionName: 'Chase', otherMasks: [] },
          now: new Date(),
        });
        order.add(g.questions.map((q) => q.prompt[0]! + q.prompt.length).join());
      }
      assert.ok(order.size > 1, 'questions come in varying order');
    });

    test('a right date of birth near today still gets four distinct plausible dates', () => {
      const g = generateChallenge({
        firstName: 'Ada',
        lastName: 'Lovelace',
        dateOfBirth: '2026-05-20',
        fact: { kind: 'depositAmount', amount: 1, otherAmounts: [] },
        now: new Date('2026-06-01T00:00:00Z'),
      });
      for (const q of g.questions) {
        assert.equal(new Set(q.options.map((o) => o.label)).size, 4);
        if (/birth/.test(q.prompt))
          for (const o of q.options) assert.ok(Date.parse(o.label) < Date.parse('2026-06-01'), o.label);
        if (/deposit/.test(q.prompt))
          for (const o of q.options) assert.ok(Number(o.label.replace(/[$,]/g, '')) > 0, o.label);
      }
    });
  });

  describe('apply profile update', () => {
    test('changes phone and e-mail, marks them unverified, ends wallet sessions, fires UserProfileUpdated', async () => {
      const { user, wallet } = await verifiable();
      const barcode = (await t.request('POST', `/api/v1/simulation/wallets/${wallet.id}/barcodes`, { as: m })).body.data
        .attributes.lookUpId;
      await t.ctx.db.update(users).set({ phoneVerified: true, emailVerified: true }).where(eq(users.id, user.id));
      const token = await passedToken(user.id);
      const [newPhone, newEmail] = [phone(), uniqueEmail('NEW')];
      t.clock.advance(MINUTE);
      const res = await update(user.id, { verificationToken: token, phoneNumber: newPhone, email: newEmail });
      assert.equal(res.status, 200, res.raw);
      const now = t.clock.now().toISOString();
      assert.equal(res.body.data.type, 'ProfileUpdateResult');
      assert.deepEqual(res.body.data.attributes, {
        phoneNumber: newPhone,
        email: newEmail.toLowerCase(),
        appliedAt: now,
        updatedAt: now,
        createdAt: now,
      });
      assert.deepEqual(res.body.data.relationships.user.data, { type: 'User', id: user.id });

      const profile = (await t.request('GET', `/api/v1/users/${user.id}`, { as: m })).body.data.attributes.profile;
      assert.equal(profile.phoneNumber, newPhone);
      assert.equal(profile.email, newEmail.toLowerCase());
      const [row] = await t.ctx.db.select().from(users).where(eq(users.id, user.id));
      assert.equal(row!.phoneVerified, false);
      assert.equal(row!.emailVerified, false);
      assert.equal(row!.sessionsRevokedAt?.toISOString(), now);
      const scan = await t.request('GET', `/api/v1/wallets/barcode/${barcode}`, { as: m });
      assert.equal(scan.status, 400, 'the barcode the old phone showed no longer works');
      assert.equal(errorCode(scan), 'WalletIdentifierExpired');

      const events = await t.request('GET', '/api/v1/webhook-events?filter[topic]=UserProfileUpdated', { as: m });
      const event = events.body.data.find((e: { attributes: { userId?: string } }) => e.attributes.userId === user.id);
      assert.ok(event, events.raw);
      assert.equal(event.attributes.walletId, wallet.id);
      const full = await t.request('GET', `/api/v1/webhook-events/${event.id}`, { as: m });
      assert.ok(full.raw.includes(newPhone), 'the event carries the updated user');
    });

    test('an e-mail-only change leaves the phone, its verification and the wallet sessions alone', async () => {
      const { user, wallet } = await verifiable();
      const barcode = (await t.request('POST', `/api/v1/simulation/wallets/${wallet.id}/barcodes`, { as: m })).body.data
        .attributes.lookUpId;
      await t.ctx.db.update(users).set({ phoneVerified: true, emailVerified: true }).where(eq(users.id, user.id));
      const res = await update(user.id, { verificationToken: await passedToken(user.id), email: uniqueEmail() });
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.data.attributes.phoneNumber, user.attributes.profile.phoneNumber);
      const [row] = await t.ctx.db.select().from(users).where(eq(users.id, user.id));
      assert.deepEqual([row!.phoneVerified, row!.emailVerified, row!.sessionsRevokedAt], [true, false, null]);
      assert.equal((await t.request('GET', `/api/v1/wallets/barcode/${barcode}`, { as: m })).status, 200);
    });

    test("a used, unknown, malformed or other user's token is 400 ChallengeNotFound; an expired one 400 ChallengeExpired", async () => {
      const { user } = await verifiable();
      const second = await verifiable();
      const token = await passedToken(user.id);
      const theirs = await passedToken(second.user.id);
      for (const bad of [`pvt_${'0'.repeat(64)}`, 'pvt_short', theirs]) {
        const res = await update(user.id, { verificationToken: bad, email: uniqueEmail() });
        assert.equal(res.status, 400, bad);
        assert.equal(errorCode(res), 'ChallengeNotFound');
      }
      assert.equal((await update(user.id, { verificationToken: token, email: uniqueEmail() })).status, 200);
      const reused = await update(user.id, { verificationToken: token, email: uniqueEmail() });
      assert.equal(reused.status, 400);
      assert.equal(errorCode(reused), 'ChallengeNotFound');

      t.clock.advance(10 * MINUTE - 1);
      assert.equal(
        (await update(second.user.id, { verificationToken: theirs, email: uniqueEmail() }, m)).status,
        200,
        'valid until 10 minutes',
      );
      const late = await passedToken(user.id);
      t.clock.advance(10 * MINUTE);
      const expired = await update(user.id, { verificationToken: late, email: uniqueEmail() });
      assert.equal(expired.status, 400);
      assert.equal(errorCode(expired), 'ChallengeExpired');
    });

    test('needs phoneNumber (E.164) or email; a taken number is 409 and leaves the token unused', async () => {
      const { user } = await verifiable();
      const token = await passedToken(user.id);
      for (const [attributes, pointer] of [
        [{ verificationToken: token }, '/data/attributes'],
        [{ verificationToken: token, phoneNumber: '555-1234' }, '/data/attributes/phoneNumber'],
        [{ verificationToken: token, email: 'not-an-email' }, '/data/attributes/email'],
        [{ phoneNumber: phone() }, '/data/attributes/verificationToken'],
      ] as const) {
        const res = await update(user.id, attributes);
        assert.equal(res.status, 400, JSON.stringify(attributes));
        assert.equal(errorCode(res), 'ValidationError');
        assert.equal(errorsOf(res)[0]!.source?.pointer, pointer);
      }
      const holder = await createUser(t, m);
      const taken = holder.attributes.profile.phoneNumber;
      const conflict = await update(user.id, { verificationToken: token, phoneNumber: taken });
      assert.equal(conflict.status, 409);
      assert.equal(errorCode(conflict), 'UserAlreadyExists');
      assert.equal(errorsOf(conflict)[0]!.meta.existingId, holder.id, 'the user that has the number');
      assert.ok(errorsOf(conflict)[0]!.links!.about!.endsWith(`/api/v1/users/${holder.id}`));
      const [row] = await t.ctx.db
        .select()
        .from(users)
        .where(and(eq(users.id, user.id)));
      assert.equal(row!.sessionsRevokedAt, null, 'nothing of the rejected change was written');
      assert.equal(
        (await update(user.id, { verificationToken: token, phoneNumber: phone() })).status,
        200,
        'the token is still good',
      );
    });

    test('two concurrent uses of one token: exactly one succeeds', async () => {
      const { user } = await verifiable();
      const token = await passedToken(user.id);
      const all = await Promise.all(
        Array.from({ length: 10 }, () => update(user.id, { verificationToken: token, email: uniqueEmail() })),
      );
      const ok = all.filter((r) => r.status === 200);
      assert.equal(ok.length, 1, all.map((r) => r.status).join());
      for (const r of all.filter((x) => x.status !== 200)) assert.equal(errorCode(r), 'ChallengeNotFound');
      const updates = rowsOf<{ n: number }>(
        await t.ctx.db.execute(sql`select count(*)::int as n from profile_updates where user_id = ${user.id}`),
      );
      assert.equal(updates[0]!.n, 1);
    });
  });

  test('answers and tokens never reach the logs', async () => {
    const { user } = await verifiable();
    const c = await challenge(user.id);
    const answers = answersFor(c, Object.values(RIGHT));
    const res = await submit(user.id, c.id, answers);
    const token = res.body.data.attributes.verificationToken as string;
    await update(user.id, { verificationToken: token, email: uniqueEmail() });
    const text = logs.join('\n');
    assert.ok(text.length > 0, 'requests were logged');
    assert.ok(!text.includes(token.slice(4)), 'token in logs');
    for (const a of answers) assert.ok(!text.includes(a.optionId), 'answer in logs');
  });
});
