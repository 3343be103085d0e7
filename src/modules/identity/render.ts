// Identity verification resources. The answer key and the token hash never leave the database.
import type { SubmissionOutcome } from './domain.ts';
import type { ChallengeRow, ProfileUpdateRow } from './sql.ts';
import { FAILURE_REASONS } from './schemas.ts';

export const identityPath = (userIdentifier: string) => `/api/v1/users/${encodeURIComponent(userIdentifier)}/identity-verification`;

export function challengeResource(c: ChallengeRow, userIdentifier: string, baseUrl: string) {
  return {
    id: c.id,
    type: 'IdentityVerificationChallenge' as const,
    attributes: {
      challengeId: c.id,
      expiresAt: c.expiresAt.toISOString(),
      questions: c.questions.map((q) => ({ id: q.id, prompt: q.prompt, options: q.options.map((o) => ({ id: o.id, label: o.label })) })),
      updatedAt: c.updatedAt.toISOString(),
      createdAt: c.createdAt.toISOString(),
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
      ...(o.verificationToken ? { verificationToken: o.verificationToken } : {}),
      expiresAt: o.tokenExpiresAt?.toISOString() ?? null,
      failureReason: (s.failureReason as FailureReason | null) ?? null,
      updatedAt: s.createdAt.toISOString(),
      createdAt: s.createdAt.toISOString(),
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
      appliedAt: u.appliedAt.toISOString(),
      updatedAt: u.createdAt.toISOString(),
      createdAt: u.createdAt.toISOString(),
    },
    relationships: { user: { data: { type: 'User' as const, id: u.userId } } },
  };
}
