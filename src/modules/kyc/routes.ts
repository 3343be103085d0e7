import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { COMMON_ERRORS, document, idParams, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { acceptKycDisclosures, getKyc, submitKycApplication } from './domain.ts';
import { kycResource } from './render.ts';
import { Kyc, KycApplicationBody } from './schemas.ts';

const TAGS = ['KYC'];
const NoQuery = Type.Object({}, { additionalProperties: false });

export async function kycRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;

  app.post(
    '/api/v1/users/:userId/disclosures/kyc',
    {
      schema: {
        tags: TAGS,
        operationId: 'acceptKycDisclosures',
        summary: 'Accept the KYC disclosures',
        description: 'Moves KYC from `NotStarted` to `DisclosuresAccepted`. Idempotent: later calls change nothing and also return 204.',
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
        operationId: 'submitKycApplication',
        summary: 'Submit a KYC application',
        description:
          'Needs accepted disclosures (else 400 `DisclosuresNotAccepted`). KYC becomes `Pending`; the sandbox decides within a second by e-mail: ' +
          '`*@highrisk.test` → `AwaitingDocuments`, `*@declined.test` → `Declined`, otherwise `Approved`. Stores the name and date of birth on the profile.',
        params: idParams('userId'),
        querystring: NoQuery,
        body: KycApplicationBody,
        response: responses({ 201: document(ref(Kyc)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req, reply) => {
      const { user, application } = await submitKycApplication(ctx.db, {
        clientId: req.client.id,
        userId: req.params.userId,
        application: req.body.data.attributes,
        provider: ctx.providers.kyc,
        now: ctx.clock.now(),
      });
      return reply.code(201).send({ data: kycResource(user, application, base) });
    },
  );

  app.get(
    '/api/v1/users/:userId/kyc',
    {
      schema: {
        tags: TAGS,
        operationId: 'getKyc',
        summary: "Get a user's KYC status",
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
