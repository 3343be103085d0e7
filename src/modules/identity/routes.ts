import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { COMMON_ERRORS, document, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { applyProfileUpdate, createChallenge, submitChallenge } from './domain.ts';
import { challengeResource, profileUpdateResource, resultResource } from './render.ts';
import {
  IdentityParams,
  IdentityVerificationChallenge,
  IdentityVerificationResult,
  ProfileUpdateBody,
  ProfileUpdateResult,
  SubmissionBody,
  SubmissionParams,
} from './schemas.ts';

const TAGS = ['Identity verification'];
const NoQuery = Type.Object({}, { additionalProperties: false });
const IDENTIFIER =
  "`userIdentifier` is a user id or one of the merchant's reference ids for the user (a UUID is tried as a user id first); " +
  'an unknown one is 404 `UserNotFound`, one matching two users is 400 `ValidationError`.';

export async function identityRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;

  app.post(
    '/api/v1/users/:userIdentifier/identity-verification/challenges',
    {
      schema: {
        tags: TAGS,
        operationId: 'createIdentityVerificationChallenge',
        summary: 'Create (or get) an identity verification challenge',
        description:
          'Three multiple-choice questions (full name, date of birth, and the last 4 digits of a linked account or, with none, the amount of a deposit ' +
          'cleared in the last 90 days), four options each. Lives 30 minutes; calling again while it lives returns the same challenge (200 both times). ' +
          'Needs an active wallet, a first and last name and a date of birth (else 403 `InsufficientVerificationData`). ' +
          'For an hour after a failed challenge: 400 `CooldownActive` with `meta.retryAfter` and a `Retry-After` header. ' +
          IDENTIFIER,
        params: IdentityParams,
        querystring: NoQuery,
        response: responses({ 200: document(ref(IdentityVerificationChallenge)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const challenge = await createChallenge(ctx.db, {
        clientId: req.client.id,
        userIdentifier: req.params.userIdentifier,
        now: ctx.clock.now(),
      });
      return { data: challengeResource(challenge, req.params.userIdentifier, base) };
    },
  );

  app.post(
    '/api/v1/users/:userIdentifier/identity-verification/challenges/:challengeId/submissions',
    {
      schema: {
        tags: TAGS,
        operationId: 'submitIdentityVerificationChallenge',
        summary: 'Answer a challenge',
        description:
          'Answer each question once with one of its options. All right: `passed: true` and a `verificationToken` (single use, valid 10 minutes, ' +
          'shown only in this response). Wrong: 200 with `passed: false` and `failureReason` `IncorrectAnswer` while attempts remain; the third wrong ' +
          'submission is `MaxAttemptsExceeded` and a submission after `expiresAt` is `ChallengeExpired`: both fail the challenge and start a one-hour cooldown. ' +
          'A passed or failed challenge: 400 `ChallengeFailed`; an unknown one: 400 `ChallengeNotFound`; an answer naming an unknown question or option: ' +
          '400 `ValidationError` (no attempt used). ' +
          IDENTIFIER,
        params: SubmissionParams,
        querystring: NoQuery,
        body: SubmissionBody,
        response: responses({ 200: document(ref(IdentityVerificationResult)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const outcome = await submitChallenge(ctx.db, {
        clientId: req.client.id,
        userIdentifier: req.params.userIdentifier,
        challengeId: req.params.challengeId,
        answers: req.body.data.attributes.answers,
        now: ctx.clock.now(),
      });
      return { data: resultResource(outcome) };
    },
  );

  app.post(
    '/api/v1/users/:userIdentifier/identity-verification/profile-updates',
    {
      schema: {
        tags: TAGS,
        operationId: 'applyVerifiedProfileUpdate',
        summary: "Change a verified user's phone number or e-mail",
        description:
          'Spends a `verificationToken` from a passed challenge of this user (used or unknown: 400 `ChallengeNotFound`; expired: 400 `ChallengeExpired`). ' +
          "Send at least one of `phoneNumber` (E.164) and `email`. A changed field becomes unverified; a phone change also ends the user's wallet " +
          'sessions (outstanding barcodes stop working). Fires `UserProfileUpdated`. A number or e-mail another user has: 409 `UserAlreadyExists`, ' +
          'and the token stays unused. ' +
          IDENTIFIER,
        params: IdentityParams,
        querystring: NoQuery,
        body: ProfileUpdateBody,
        response: responses({ 200: document(ref(ProfileUpdateResult)) }, [...COMMON_ERRORS, 404, 409]),
      },
    },
    async (req) => {
      const { verificationToken, ...change } = req.body.data.attributes;
      const { update } = await applyProfileUpdate(ctx.db, {
        clientId: req.client.id,
        userIdentifier: req.params.userIdentifier,
        verificationToken,
        change,
        now: ctx.clock.now(),
        baseUrl: base,
      });
      return { data: profileUpdateResource(update) };
    },
  );
}
