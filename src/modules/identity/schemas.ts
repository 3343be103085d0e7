import { Type } from 'typebox';
import { E164, Email, Nullable, Timestamp, Uuid, requestBody, resource } from '../../http/schemas.ts';

export const IdentityParams = Type.Object(
  {
    userIdentifier: Type.String({
      minLength: 1,
      maxLength: 255,
      description: "A user id or one of the merchant's reference ids for the user",
    }),
  },
  { additionalProperties: false },
);

export const SubmissionParams = Type.Object(
  {
    userIdentifier: IdentityParams.properties.userIdentifier,
    // Not format-checked: an id that is not a challenge's is 400 ChallengeNotFound (spec error table).
    challengeId: Type.String({ minLength: 1, maxLength: 100, description: 'The `challengeId` of the challenge' }),
  },
  { additionalProperties: false },
);

const Option = Type.Object({ id: Type.String({ examples: ['opt_3f9c0a1b2d4e5f607182'] }), label: Type.String() });
const Question = Type.Object({
  id: Type.String({ examples: ['q_8a7b6c5d4e3f2a1b0c9d'] }),
  prompt: Type.String(),
  options: Type.Array(Option, { minItems: 4, maxItems: 4 }),
});

export const IdentityVerificationChallenge = resource(
  'IdentityVerificationChallenge',
  'IdentityVerificationChallenge',
  {
    challengeId: Uuid(),
    expiresAt: Timestamp({ description: '30 minutes after creation' }),
    questions: Type.Array(Question, { minItems: 3, maxItems: 3 }),
    updatedAt: Timestamp(),
    createdAt: Timestamp(),
  },
  { links: { submissions: Type.String({ description: 'Where to POST the answers' }) } },
);

export const SubmissionBody = requestBody(
  'IdentityVerificationSubmission',
  Type.Object(
    {
      answers: Type.Array(
        Type.Object(
          {
            questionId: Type.String({ minLength: 1, maxLength: 100 }),
            optionId: Type.String({ minLength: 1, maxLength: 100 }),
          },
          { additionalProperties: false },
        ),
        { minItems: 1, maxItems: 10 },
      ),
      metadata: Type.Optional(
        Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), {
          description: 'Free name/value pairs, not interpreted',
        }),
      ),
    },
    { additionalProperties: false },
  ),
);

export const FAILURE_REASONS = ['IncorrectAnswer', 'ChallengeExpired', 'MaxAttemptsExceeded'] as const;

export const IdentityVerificationResult = resource(
  'IdentityVerificationResult',
  'IdentityVerificationResult',
  {
    passed: Type.Boolean(),
    verificationToken: Nullable(
      Type.String({
        description: 'When passed: single use, valid 10 minutes; null otherwise',
        examples: [`pvt_${'0'.repeat(64)}`],
      }),
    ),
    expiresAt: Nullable(Timestamp({ description: "The token's expiry; null when not passed" })),
    failureReason: Nullable(Type.Union(FAILURE_REASONS.map((r) => Type.Literal(r)))),
    updatedAt: Timestamp(),
    createdAt: Timestamp(),
  },
  {
    meta: { attemptsRemaining: Type.Integer({ description: 'Submissions this challenge still accepts' }) },
    description: 'The outcome of one submission; its id is the submission id.',
  },
);

export const ProfileUpdateBody = requestBody(
  'ProfileUpdate',
  Type.Object(
    {
      verificationToken: Type.String({ minLength: 1, maxLength: 100 }),
      phoneNumber: Type.Optional(E164()),
      email: Type.Optional(Email()),
    },
    { additionalProperties: false },
  ),
);

export const ProfileUpdateResult = resource(
  'ProfileUpdateResult',
  'ProfileUpdateResult',
  {
    phoneNumber: Nullable(
      Type.String({ description: "The user's phone number after the update (null: a user known by e-mail only)" }),
    ),
    email: Nullable(Type.String({ description: "The user's e-mail after the update" })),
    appliedAt: Timestamp(),
    updatedAt: Timestamp(),
    createdAt: Timestamp(),
  },
  { relationships: { user: Type.Object({ data: Type.Object({ type: Type.Literal('User'), id: Type.String() }) }) } },
);

export const schemas = [IdentityVerificationChallenge, IdentityVerificationResult, ProfileUpdateResult];
