import { Type } from 'typebox';
import type { FastifySchemaCompiler } from 'fastify';
import type { AppContext } from '../../context.ts';
import { unwrapBarePointers } from '../../http/jsonapi-request.ts';
import { pageLinks, pageOf } from '../../http/paging.ts';
import { COMMON_ERRORS, document, idParams, listDocument, ref, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { validatorCompiler } from '../../http/validation.ts';
import { createUser, getUserSummary, listUsers, updateAttachedProfile } from './domain.ts';
import { attachedProfileResource, userResource, userSummaryResource } from './render.ts';
import {
  AttachedProfile,
  AttachedProfileBareBody,
  AttachedProfileBody,
  CreateUserBody,
  ListUsersQuery,
  User,
  UserReferenceParams,
  UserSummary,
} from './schemas.ts';

const TAGS = ['Users'];

export async function userRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.api.publicUrl;

  app.post(
    '/api/v1/users',
    {
      schema: {
        tags: TAGS,
        operationId: 'createUser',
        summary: 'Create a user',
        description:
          'A user needs `phoneNumber` (E.164) or `email` or both (Accrue requires `email`); each is unique per merchant. ' +
          'A user without a phone number cannot sign in to the wallet until one is set by a verified profile update.',
        body: CreateUserBody,
        response: responses({ 201: document(ref(User)) }, [...COMMON_ERRORS, 409]),
      },
    },
    async (req, reply) => {
      const user = await createUser(ctx.db, {
        clientId: req.client.id,
        ...req.body.data.attributes,
        baseUrl: base,
        now: ctx.clock.now(),
      });
      reply.code(201).header('location', userResource(user, base).links.self);
      return { data: userResource(user, base) };
    },
  );

  app.get(
    '/api/v1/users',
    {
      schema: {
        tags: TAGS,
        operationId: 'listUsers',
        summary: 'List users',
        description: '`filter[referenceId]` matches either reference id. Newest first.',
        querystring: ListUsersQuery,
        response: responses({ 200: listDocument(ref(User)) }, COMMON_ERRORS),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const { rows, total } = await listUsers(ctx.db, {
        clientId: req.client.id,
        filters: {
          phoneNumber: req.query['filter[phoneNumber]'],
          email: req.query['filter[email]'],
          referenceId: req.query['filter[referenceId]'],
        },
        page,
      });
      return {
        data: rows.map((u) => userResource(u, base)),
        meta: { total, ...page },
        links: pageLinks(base, req.url, page, total),
      };
    },
  );

  app.get(
    '/api/v1/users/:userId',
    {
      schema: {
        tags: TAGS,
        operationId: 'getUser',
        summary: 'Get a user',
        description: 'Shows only `disabled`, `profile`, `updatedAt` and `createdAt`.',
        params: idParams('userId'),
        querystring: Type.Object({}, { additionalProperties: false }),
        response: responses({ 200: document(ref(UserSummary)) }, [...COMMON_ERRORS, 404]),
      },
    },
    async (req) => {
      const user = await getUserSummary(ctx.db, { clientId: req.client.id, userId: req.params.userId });
      return { data: userSummaryResource(user, base) };
    },
  );

  // The spec's sample sends `type` and `attributes` without a `data` wrapper; both are
  // accepted. The JSON:API request hook wraps a bare body before validation (config.jsonApi),
  // and error pointers are unwrapped after.
  const wrappedValidator = (validatorCompiler as FastifySchemaCompiler<unknown>)({
    schema: AttachedProfileBody,
    method: 'PATCH',
    url: '',
    httpPart: 'body',
  });
  app.patch(
    '/api/v1/users/:userReference/attached-profile',
    {
      schema: {
        tags: TAGS,
        operationId: 'updateUser',
        summary: "Update the merchant's attached profile",
        description:
          '`userReference` is a user id or a reference id. Reference ids are unique per merchant and immutable once set. ' +
          "The body may also omit the `data` wrapper (`{type, attributes}`). An `id` in the body must be the user's id or the `userReference` of the URL " +
          '(409 `Conflict` otherwise).',
        params: UserReferenceParams,
        body: Type.Union([AttachedProfileBody, AttachedProfileBareBody]),
        response: responses({ 200: document(ref(AttachedProfile)) }, [...COMMON_ERRORS, 409]),
      },
      config: { jsonApi: { bareResource: true, idCheckedByRoute: true } },
      validatorCompiler: (route) => (route.httpPart === 'body' ? wrappedValidator : validatorCompiler(route)),
      errorHandler: (err, req, reply) => {
        unwrapBarePointers(err, req);
        return reply.send(err);
      },
    },
    async (req) => {
      const body = req.body as { data: { attributes: Record<string, string> } };
      const user = await updateAttachedProfile(ctx.db, {
        clientId: req.client.id,
        userReference: req.params.userReference,
        resourceId: req.jsonApi?.id,
        patch: body.data.attributes,
        baseUrl: base,
        now: ctx.clock.now(),
      });
      return { data: attachedProfileResource(user, base) };
    },
  );
}
