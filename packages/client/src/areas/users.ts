import { type Api, type Attributes, body, unwrap } from './shared.ts';

export const users = (api: Api) => ({
  /** A user needs `phoneNumber` or `email`, or both. */
  create: (
    a: ({ phoneNumber: string; email?: string } | { phoneNumber?: string; email: string }) & {
      firstName?: string;
      lastName?: string;
    },
  ) => unwrap(api.POST('/api/v1/users', { body: body('User', a) })).then((r) => r.data),
  get: (userId: string) =>
    unwrap(api.GET('/api/v1/users/{userId}', { params: { path: { userId } } })).then((r) => r.data),
});

export const kyc = (api: Api) => ({
  /** The user accepts the KYC disclosures: needed before the first application. */
  acceptDisclosures: (userId: string) =>
    unwrap(api.POST('/api/v1/users/{userId}/disclosures/kyc', { params: { path: { userId } } })),
  /** Apply; the KYC provider decides (the sandbox within a second): see `status`. */
  apply: (userId: string, a: Attributes<'/api/v1/users/{userId}/kyc/application'>) =>
    unwrap(
      api.POST('/api/v1/users/{userId}/kyc/application', {
        params: { path: { userId } },
        body: body('KycApplication', a) as never,
      }),
    ).then((r) => r.data),
  status: (userId: string) =>
    unwrap(api.GET('/api/v1/users/{userId}/kyc/status', { params: { path: { userId } } })).then((r) => r.data),
  get: (userId: string) =>
    unwrap(api.GET('/api/v1/users/{userId}/kyc', { params: { path: { userId } } })).then((r) => r.data),
  /** A link to the provider's identity-document page, for a user whose KYC waits for documents. */
  documentVerificationLink: (userId: string, a: Attributes<'/api/v1/users/{userId}/kyc/document-verification-link'>) =>
    unwrap(
      api.POST('/api/v1/users/{userId}/kyc/document-verification-link', {
        params: { path: { userId } },
        body: body('DocumentVerificationLink', a) as never,
      }),
    ).then((r) => r.data),
});

/** Verify a user's identity with knowledge questions before changing their phone number or email. */
export const identityVerification = (api: Api) => ({
  /** Questions for the user (`userIdentifier`: the user's id or one of its reference ids). */
  createChallenge: (userIdentifier: string) =>
    unwrap(
      api.POST('/api/v1/users/{userIdentifier}/identity-verification/challenges', {
        params: { path: { userIdentifier } },
      }),
    ).then((r) => r.data),
  /** The user's answers; a passed challenge carries the `verificationToken` for `updateProfile`. */
  submit: (
    userIdentifier: string,
    challengeId: string,
    a: Attributes<'/api/v1/users/{userIdentifier}/identity-verification/challenges/{challengeId}/submissions'>,
  ) =>
    unwrap(
      api.POST('/api/v1/users/{userIdentifier}/identity-verification/challenges/{challengeId}/submissions', {
        params: { path: { userIdentifier, challengeId } },
        body: body('IdentityVerificationSubmission', a),
      }),
    ).then((r) => r.data),
  /** Change the phone number or email with the token of a passed challenge. */
  updateProfile: (
    userIdentifier: string,
    a: Attributes<'/api/v1/users/{userIdentifier}/identity-verification/profile-updates'>,
  ) =>
    unwrap(
      api.POST('/api/v1/users/{userIdentifier}/identity-verification/profile-updates', {
        params: { path: { userIdentifier } },
        body: body('ProfileUpdate', a),
      }),
    ).then((r) => r.data),
});

export const linkedAccounts = (api: Api) => ({
  list: (userId: string) =>
    unwrap(api.GET('/api/v1/users/{userId}/linked-accounts', { params: { path: { userId } } })).then((r) => r.data),
  /** Removes the account for good. */
  remove: (userId: string, linkedAccountId: string) =>
    unwrap(
      api.DELETE('/api/v1/users/{userId}/linked-accounts/{linkedAccountId}', {
        params: { path: { userId, linkedAccountId } },
      }),
    ),
});
