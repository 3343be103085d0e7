// Identity verification resources. The answer key and the token hash never leave the database.
import type { SubmissionOutcome } from './domain.ts';
import type { ChallengeRow, ProfileUpdateRow } from './sql.ts';
import type { FAILURE_REASONS } from './schemas.ts';
import { isoTime, isoTimeOrNull } from '../../timestamps.ts';

const identityPath = (userIdentifier: string) =>
  `/api/v1/users/${encodeURIComponent(userIdentifier)}/identity-verification`;

export function challengeResource(c: ChallengeRow, userIdentifier: string, baseUrl: string) {
  return {
    id: c.id,
    type: 'IdentityVerificationChallenge' as const,
    attributes: {
      challengeId: c.id,
      expiresAt: isoTime(c.expiresAt),
      questions: c.questions.map((q) => ({
        id: q.id,
        prompt: q.prompt,
        options: q.options.map((o) => ({ id: o.id, label: o.label })),
      })),
      updatedAt: isoTime(c.updatedAt),
      createdAt: isoTime(c.createdAt),
    },
    links: { submissions: `${baseUrl}${identityPath(userIdentifier)}/challenges/${c.id}/submissions` },
  };
}

type FailureReason = (typeof FAILURE_REASONS)[number];

export function resultResource(o: SubmissionOutcome) {
  const s = o.submission;
  return {
    id: s.id,
    type: 'IdentityVerificationResult' as const,
    attributes: {
      passed: s.passed,
      verificationToken: o.verificationToken ?? null, // Accrue requires the member (nullable)
      expiresAt: isoTimeOrNull(o.tokenExpiresAt),
      failureReason: (s.failureReason as FailureReason | null) ?? null,
      updatedAt: isoTime(s.createdAt),
      createdAt: isoTime(s.createdAt),
    },
    meta: { attemptsRemaining: o.attemptsRemaining },
  };
}

export function profileUpdateResource(u: ProfileUpdateRow) {
  return {
    id: u.id,
    type: 'ProfileUpdateResult' as const,
    attributes: {
      phoneNumber: u.phoneNumber,
      email: u.email,
      appliedAt: isoTime(u.appliedAt),
      updatedAt: isoTime(u.createdAt),
      createdAt: isoTime(u.createdAt),
    },
    relationships: { user: { data: { type: 'User' as const, id: u.userId } } },
  };
}
