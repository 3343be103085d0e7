import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { COMMON_ERRORS, document, idParams, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import {
  acceptKycDisclosures,
  completeDocumentVerification,
  createDocumentVerificationLink,
  fromAccrueApplication,
  getKyc,
  submitKycApplication,
  type KycApplicationInput,
} from './domain.ts';
import { documentLinkResource, kycResource } from './render.ts';
import {
  AccrueKycApplicationBody,
  DocumentVerificationLink,
  DocumentVerificationLinkBody,
  Kyc,
  KycApplicationBody,
} from './schemas.ts';

const TAGS = ['KYC'];
const NoQuery = Type.Object({}, { additionalProperties: false });
const SANDBOX_RULES =
  'The sandbox decides within a second by e-mail address: `*@highrisk.com` → `ManualReview`, `*@highrisk.test` → `AwaitingDocuments`, ' +
  '`*@veryhighrisk.com` and `*@declined.test` → `Denied`, any other (`*@lowrisk.com`) → `Approved`; after documents it approves, ' +
  'unless the local part ends in `+denied`.';

export async function kycRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;

  app.post(
    '/api/v1/users/:userId/disclosures/kyc',
    {
      schema: {
        tags: TAGS,
        operationId: 'acceptKycDisclosureDocuments',
        summary: 'Accept the KYC disclosures',
        description:
          'Records the acceptance (`disclosuresAcceptedAt`); an application needs it. Idempotent: later calls change nothing and also return 204.',
        params: idParams('userId'),
        querystring: NoQuery,
        response: responses({ 204: null }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req, reply) => {
      await acceptKycDisclosures(ctx.db, { clientId: req.client.id, userId: req.params.userId, now: ctx.clock.now() });
      return reply.code(204).send();
    },
  );

  app.post(
    '/api/v1/users/:userId/kyc/application',
    {
      schema: {
        tags: TAGS,
        operationId: 'createKycApplication',
        summary: 'Submit a KYC application',
        description:
          "Takes Coffer's body (type `KycApplication`, a nested `address` with its `country`) or Accrue's (type `Kyc`, a flat US address and `phone`). " +
          'Needs accepted disclosures (else 400 `DisclosuresNotAccepted`); accepted after disclosures or while `AwaitingDocuments` (else 400 `KycApplicationFailed`). ' +
          `KYC becomes \`Pending\`; the provider's answer arrives as webhook events. ${SANDBOX_RULES} Stores the name and date of birth on the profile.`,
        params: idParams('userId'),
        querystring: NoQuery,
        body: Type.Union([KycApplicationBody, AccrueKycApplicationBody]),
        response: responses({ 200: document(ref(Kyc)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      // The two shapes differ in the address: nested (Coffer's) or flat (Accrue's).
      const a = req.body.data.attributes;
      const application: KycApplicationInput = 'address' in a ? a : fromAccrueApplication(a);
      const { user, application: row } = await submitKycApplication(ctx.db, {
        clientId: req.client.id,
        userId: req.params.userId,
        application,
        provider: ctx.providers.kyc,
        now: ctx.clock.now(),
        baseUrl: base,
      });
      return { data: kycResource(user, row, base) };
    },
  );

  // Accrue's path, and Coffer's shorter one: the same answer.
  for (const [url, operationId] of [
    ['/api/v1/users/:userId/kyc/status', 'getKycStatus'],
    ['/api/v1/users/:userId/kyc', 'getKyc'],
  ] as const) {
    app.get(
      url,
      {
        schema: {
          tags: TAGS,
          operationId,
          summary: "Get a user's KYC status",
          description: 'Every user has a KYC record from creation: `NotStarted` until an application (never `null`).',
          params: idParams('userId'),
          querystring: NoQuery,
          response: responses({ 200: document(ref(Kyc)) }, [...COMMON_ERRORS, 404]),
        },
      },
      async (req) => {
        const { user, application } = await getKyc(ctx.db, { clientId: req.client.id, userId: req.params.userId });
        return { data: kycResource(user, application, base) };
      },
    );
  }

  app.post(
    '/api/v1/users/:userId/kyc/document-verification-link',
    {
      schema: {
        tags: TAGS,
        operationId: 'getDocumentVerificationLink',
        summary: 'Get a document verification link',
        description:
          "A link to the KYC provider's page where the user uploads identity documents, while KYC is `AwaitingDocuments` or `ManualReview` " +
          '(else 400 `DocumentVerificationFailed`). Send the user there; the page sends them back to `redirectUrl`, and then call ' +
          '`document-verification/complete`. Each call makes a new link. In the sandbox the link is a page of the widget host that needs no documents.',
        params: idParams('userId'),
        querystring: NoQuery,
        body: DocumentVerificationLinkBody,
        response: responses({ 200: document(ref(DocumentVerificationLink)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const link = await createDocumentVerificationLink(ctx.db, {
        clientId: req.client.id,
        userId: req.params.userId,
        redirectUrl: req.body.data.attributes.redirectUrl,
        provider: ctx.providers.kyc,
        now: ctx.clock.now(),
      });
      return { data: documentLinkResource(link) };
    },
  );

  app.post(
    '/api/v1/users/:userId/kyc/document-verification/complete',
    {
      schema: {
        tags: TAGS,
        operationId: 'completeDocumentVerification',
        summary: 'Complete document verification',
        description:
          'The user has finished uploading documents: KYC goes back to `Pending` (`KycPending`) and the provider reviews them; its decision arrives as webhook events. ' +
          'Only while `AwaitingDocuments` or `ManualReview` (else 400 `DocumentVerificationFailed`); once completed, calling again answers the current status and changes nothing. ' +
          SANDBOX_RULES,
        params: idParams('userId'),
        querystring: NoQuery,
        response: responses({ 200: document(ref(Kyc)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const { user, application } = await completeDocumentVerification(ctx.db, {
        clientId: req.client.id,
        userId: req.params.userId,
        provider: ctx.providers.kyc,
        now: ctx.clock.now(),
        baseUrl: base,
      });
      return { data: kycResource(user, application, base) };
    },
  );
}
