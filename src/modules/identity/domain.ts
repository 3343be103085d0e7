// Identity verification (spec "Identity verification challenge", docs/identity.md#challenges-in-detail): a challenge of
// three questions, submissions with at most three attempts, a one-time verification token,
// and the verified phone / e-mail change the token pays for.
import { createHash, randomBytes } from 'node:crypto';
import { uuidv7 } from '../../ids.ts';
import type { Db, Executor } from '../../db/open.ts';
import { uniqueViolation } from '../../db/errors.ts';
import { apiError, ApiError, errorItem, type ErrorItem } from '../../http/errors.ts';
import { recordEvent } from '../events/record.ts';
import { userResource } from '../users/render.ts';
import { existingUser, resolveUserReference } from '../users/domain.ts';
import { findUser, updateUserRow, type UserRow } from '../users/sql.ts';
import { generateChallenge, type KnowledgeFact } from './questions.ts';
import * as q from './sql.ts';

const MINUTE = 60_000;
const CHALLENGE_LIFETIME_MS = 30 * MINUTE;
const TOKEN_LIFETIME_MS = 10 * MINUTE;
const COOLDOWN_MS = 60 * MINUTE;
const MAX_ATTEMPTS = 3;
/** How far back a cleared deposit qualifies for the third question. */
const DEPOSIT_WINDOW_MS = 90 * 24 * 60 * MINUTE;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TOKEN = /^pvt_[0-9a-f]{64}$/;

type FailureReason = 'IncorrectAnswer' | 'ChallengeExpired' | 'MaxAttemptsExceeded';

/** Tokens are stored only as their SHA-256: 32 random bytes leave nothing to brute-force. */
const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** An unknown identifier is 404 UserNotFound (docs/identity.md#challenges-in-detail). */
function resolveUser(db: Executor, clientId: string, userIdentifier: string): Promise<UserRow> {
  return resolveUserReference(db, { clientId, reference: userIdentifier, notFound: { code: 'UserNotFound' } });
}

const insufficient = (detail: string) => apiError('InsufficientVerificationData', detail);

async function knowledgeFact(tx: Executor, clientId: string, userId: string, now: Date): Promise<KnowledgeFact> {
  const accounts = await q.connectedAccountsOf(tx, clientId, userId);
  if (accounts.length > 0) {
    const [first, ...rest] = accounts;
    return {
      kind: 'accountMask',
      mask: first!.mask,
      institutionName: first!.institutionName,
      otherMasks: rest.map((a) => a.mask),
    };
  }
  const amounts = await q.clearedDepositAmounts(tx, clientId, userId, new Date(now.getTime() - DEPOSIT_WINDOW_MS));
  if (amounts.length > 0)
    return {
      kind: 'depositAmount',
      amount: amounts[0]!,
      otherAmounts: amounts.slice(1).filter((a) => a !== amounts[0]),
    };
  throw insufficient('The user has neither a linked account nor a deposit cleared in the last 90 days to ask about.');
}

/**
 * Create Challenge: the pending one again while it lives, else a new one, unless a failure in
 * the last hour blocks it. The user row is locked so concurrent calls agree on one challenge.
 */
export async function createChallenge(
  db: Db,
  opts: { clientId: string; userIdentifier: string; now: Date },
): Promise<q.ChallengeRow> {
  const { clientId, now } = opts;
  return db.transaction(async (tx) => {
    const found = await resolveUser(tx, clientId, opts.userIdentifier);
    const user = (await findUser(tx, clientId, found.id, { forUpdate: true }))!;
    if (!(await q.activeWalletOf(tx, clientId, user.id)))
      throw insufficient('The user has no active wallet with this merchant.');
    if (!user.firstName || !user.lastName)
      throw insufficient('The user has no full name on file (first and last name).');
    if (!user.dateOfBirth) throw insufficient('The user has no date of birth on file.');

    const latest = await q.latestChallenge(tx, clientId, user.id);
    if (latest?.status === 'pending' && latest.expiresAt > now) return latest;
    const failure = await q.failureSince(tx, clientId, user.id, new Date(now.getTime() - COOLDOWN_MS));
    if (failure) {
      const retryAfter = new Date(failure.failedAt!.getTime() + COOLDOWN_MS);
      throw apiError(
        'CooldownActive',
        `A challenge failed at ${failure.failedAt!.toISOString()}; a new one can be created from ${retryAfter.toISOString()}.`,
        {
          meta: { retryAfter: retryAfter.toISOString() },
          headers: { 'retry-after': String(Math.ceil((retryAfter.getTime() - now.getTime()) / 1000)) },
        },
      );
    }
    // A pending challenge that lapsed unanswered is superseded: no cooldown, nothing to submit to.
    if (latest?.status === 'pending') await q.updateChallenge(tx, latest.id, { status: 'expired', updatedAt: now });

    const fact = await knowledgeFact(tx, clientId, user.id, now);
    const { questions, answerKey } = generateChallenge({
      firstName: user.firstName,
      lastName: user.lastName,
      dateOfBirth: user.dateOfBirth,
      fact,
      now,
    });
    return q.insertChallenge(tx, {
      id: uuidv7(),
      clientId,
      userId: user.id,
      status: 'pending',
      questions,
      answerKey,
      expiresAt: new Date(now.getTime() + CHALLENGE_LIFETIME_MS),
      createdAt: now,
      updatedAt: now,
    });
  });
}

export interface Answer {
  questionId: string;
  optionId: string;
}

/** Every answer must name a question of this challenge and one of its options, each question once. */
function checkAnswers(challenge: q.ChallengeRow, answers: Answer[]): void {
  const problems: ErrorItem[] = [];
  const seen = new Set<string>();
  answers.forEach((a, i) => {
    const question = challenge.questions.find((x) => x.id === a.questionId);
    const at = `/data/attributes/answers/${i}`;
    if (!question) {
      problems.push(
        errorItem('ValidationError', `"${a.questionId}" is not a question of this challenge.`, {
          pointer: `${at}/questionId`,
        }),
      );
    } else if (seen.has(a.questionId)) {
      problems.push(
        errorItem('ValidationError', `Question "${a.questionId}" is answered more than once.`, {
          pointer: `${at}/questionId`,
        }),
      );
    } else if (!question.options.some((o) => o.id === a.optionId)) {
      problems.push(
        errorItem('ValidationError', `"${a.optionId}" is not an option of question "${a.questionId}".`, {
          pointer: `${at}/optionId`,
        }),
      );
    }
    seen.add(a.questionId);
  });
  const missing = challenge.questions.filter((x) => !seen.has(x.id));
  if (missing.length > 0 && problems.length === 0) {
    problems.push(
      errorItem('ValidationError', `Answer every question; missing: ${missing.map((m) => m.id).join(', ')}.`, {
        pointer: '/data/attributes/answers',
      }),
    );
  }
  if (problems.length > 0) throw new ApiError(problems);
}

export interface SubmissionOutcome {
  submission: q.SubmissionRow;
  /** The token in clear, only in the response to the passing submission. */
  verificationToken?: string;
  tokenExpiresAt?: Date;
  attemptsRemaining: number;
}

/**
 * Submit answers. Wrong answers are a 200 with `passed: false` (docs/identity.md#challenges-in-detail); the third wrong
 * submission and a submission after expiry fail the challenge and start the cooldown.
 */
export async function submitChallenge(
  db: Db,
  opts: { clientId: string; userIdentifier: string; challengeId: string; answers: Answer[]; now: Date },
): Promise<SubmissionOutcome> {
  const { clientId, now } = opts;
  return db.transaction(async (tx) => {
    const user = await resolveUser(tx, clientId, opts.userIdentifier);
    const challenge = UUID.test(opts.challengeId)
      ? await q.lockChallenge(tx, clientId, user.id, opts.challengeId.toLowerCase())
      : undefined;
    if (!challenge) throw apiError('ChallengeNotFound', `No challenge ${opts.challengeId} for this user.`);
    if (challenge.status === 'passed' || challenge.status === 'failed') {
      throw apiError(
        'ChallengeFailed',
        `The challenge has ${challenge.status}; create a new one${challenge.status === 'failed' ? ' after the cooldown' : ''}.`,
      );
    }
    if (challenge.status === 'expired')
      throw apiError('ChallengeExpired', 'The challenge lapsed and a newer one replaced it.');
    checkAnswers(challenge, opts.answers);

    const record = (passed: boolean, failureReason: FailureReason | null) =>
      q.insertSubmission(tx, {
        id: uuidv7(),
        clientId,
        challengeId: challenge.id,
        passed,
        failureReason,
        createdAt: now,
      });
    const fail = async (reason: FailureReason, attempts: number) => {
      const ends = reason !== 'IncorrectAnswer';
      await q.updateChallenge(tx, challenge.id, {
        failedAttempts: attempts,
        ...(ends ? { status: 'failed', failureReason: reason, failedAt: now } : {}),
        updatedAt: now,
      });
      return { submission: await record(false, reason), attemptsRemaining: ends ? 0 : MAX_ATTEMPTS - attempts };
    };

    if (challenge.expiresAt <= now) return fail('ChallengeExpired', challenge.failedAttempts);
    const correct = challenge.questions.every(
      (x) => opts.answers.find((a) => a.questionId === x.id)?.optionId === challenge.answerKey[x.id],
    );
    if (!correct) {
      const attempts = challenge.failedAttempts + 1;
      return fail(attempts >= MAX_ATTEMPTS ? 'MaxAttemptsExceeded' : 'IncorrectAnswer', attempts);
    }
    const token = `pvt_${randomBytes(32).toString('hex')}`;
    const tokenExpiresAt = new Date(now.getTime() + TOKEN_LIFETIME_MS);
    await q.updateChallenge(tx, challenge.id, {
      status: 'passed',
      passedAt: now,
      tokenHash: hashToken(token),
      tokenExpiresAt,
      updatedAt: now,
    });
    return { submission: await record(true, null), verificationToken: token, tokenExpiresAt, attemptsRemaining: 0 };
  });
}

export interface ProfileChange {
  phoneNumber?: string;
  email?: string;
}

/**
 * Apply Profile Update: consumes the token and changes the user's own contact details in one
 * transaction. The token row is locked, so of two concurrent uses one waits, then finds the
 * token used (400 ChallengeNotFound); a rejected change (the number belongs to another user)
 * rolls back and leaves the token unused.
 */
export async function applyProfileUpdate(
  db: Db,
  opts: {
    clientId: string;
    userIdentifier: string;
    verificationToken: string;
    change: ProfileChange;
    now: Date;
    baseUrl: string;
  },
): Promise<{ update: q.ProfileUpdateRow; user: UserRow }> {
  const { clientId, now, change } = opts;
  if (change.phoneNumber === undefined && change.email === undefined) {
    throw apiError('ValidationError', 'Send at least one of `phoneNumber` and `email`.', {
      pointer: '/data/attributes',
    });
  }
  const applied = db.transaction(async (tx) => {
    const found = await resolveUser(tx, clientId, opts.userIdentifier);
    const challenge = TOKEN.test(opts.verificationToken)
      ? await q.lockChallengeByToken(tx, clientId, found.id, hashToken(opts.verificationToken))
      : undefined;
    if (!challenge || challenge.tokenUsedAt)
      throw apiError('ChallengeNotFound', 'The verification token is unknown or already used.', {
        pointer: '/data/attributes/verificationToken',
      });
    if (challenge.tokenExpiresAt! <= now) {
      throw apiError('ChallengeExpired', 'The verification token has expired; pass a new challenge.', {
        pointer: '/data/attributes/verificationToken',
      });
    }
    await q.updateChallenge(tx, challenge.id, { tokenUsedAt: now, updatedAt: now });

    const user = (await findUser(tx, clientId, found.id, { forUpdate: true }))!;
    const email = change.email?.toLowerCase();
    const phoneChanged = change.phoneNumber !== undefined && change.phoneNumber !== user.phoneNumber;
    const emailChanged = email !== undefined && email !== user.email;
    let updated: UserRow;
    try {
      updated = await updateUserRow(tx, clientId, user.id, {
        ...(phoneChanged ? { phoneNumber: change.phoneNumber, phoneVerified: false, sessionsRevokedAt: now } : {}),
        ...(emailChanged ? { email, emailVerified: false } : {}),
        updatedAt: now,
      });
    } catch (err) {
      const c = uniqueViolation(err);
      if (c === 'users_client_phone_uq')
        throw apiError('UserAlreadyExists', 'Another user has this phone number.', {
          pointer: '/data/attributes/phoneNumber',
        });
      if (c === 'users_client_email_uq')
        throw apiError('UserAlreadyExists', 'Another user has this e-mail.', { pointer: '/data/attributes/email' });
      throw err;
    }
    const wallet = await q.activeWalletOf(tx, clientId, user.id);
    // Ending the wallet sessions: what the old phone can still show (a barcode) stops working.
    if (phoneChanged && wallet) await q.expireBarcodes(tx, clientId, wallet.id, now);
    const update = await q.insertProfileUpdate(tx, {
      id: uuidv7(),
      clientId,
      userId: user.id,
      challengeId: challenge.id,
      phoneNumber: updated.phoneNumber,
      email: updated.email,
      previousPhoneNumber: user.phoneNumber,
      previousEmail: user.email,
      appliedAt: now,
      createdAt: now,
    });
    await recordEvent(tx, {
      clientId,
      topic: 'UserProfileUpdated',
      userId: user.id,
      walletId: wallet?.id,
      resource: userResource(updated, opts.baseUrl),
      now,
    });
    return { update, user: updated };
  });
  try {
    return await applied;
  } catch (err) {
    // The number or e-mail belongs to another user: name that user (read after the rollback).
    const item = err instanceof ApiError ? err.items[0] : undefined;
    if (item?.code !== 'UserAlreadyExists' || !item.source?.pointer) throw err;
    const byPhone = item.source.pointer.endsWith('phoneNumber');
    throw apiError('UserAlreadyExists', item.detail, {
      pointer: item.source.pointer,
      ...(await existingUser(
        db,
        clientId,
        byPhone ? { phoneNumber: change.phoneNumber } : { email: change.email },
        opts.baseUrl,
      )),
    });
  }
}
