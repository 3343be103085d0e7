// The operator's admin API (docs/adr/0011-admin-api-and-cli.md): merchants (clients), their settings and secrets.
// Served only on the admin listener, behind ADMIN_TOKEN.
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { pageLinks, pageOf, listQuery } from '../../http/paging.ts';
import {
  document,
  idParams,
  listDocument,
  ref,
  requestBody,
  resource,
  responses,
  Timestamp,
  Uuid,
} from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { createClient, getClient, removeClientSecret, rotateClientSecret, updateClient } from '../clients/domain.ts';
import { ClientSettingsSchema, EffectiveSettingsSchema, resolveSettings } from '../clients/settings.ts';
import { listClientRows, listSecretRows, type ClientRow, type ClientSecretRow } from '../clients/sql.ts';
import { checkLedger, recentLedgerChecks } from '../../ledger/scheduled-check.ts';

const TAGS = ['Admin'];
const ADMIN_ERRORS = [400, 401, 415] as const;
const NoQuery = Type.Object({}, { additionalProperties: false });

const SecretSummary = Type.Object({
  id: Uuid(),
  hint: Type.String({ description: 'Last four characters' }),
  createdAt: Timestamp(),
});

const Client = resource('Client', 'Client', {
  name: Type.String(),
  disabled: Type.Boolean(),
  settings: ref(EffectiveSettingsSchema),
  secrets: Type.Array(SecretSummary),
  secret: Type.Optional(Type.String({ description: 'The new secret; shown only in the create response' })),
  secretId: Type.Optional(Uuid()),
  createdAt: Timestamp(),
  updatedAt: Timestamp(),
});

const ClientSecret = resource('ClientSecret', 'ClientSecret', {
  secret: Type.String({ description: 'Shown once' }),
  hint: Type.String(),
  createdAt: Timestamp(),
});

const CreateClientBody = requestBody(
  'Client',
  Type.Object(
    { name: Type.String({ minLength: 1, maxLength: 200 }), settings: Type.Optional(ClientSettingsSchema) },
    { additionalProperties: false },
  ),
);
const UpdateClientBody = requestBody(
  'Client',
  Type.Object(
    {
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
      disabled: Type.Optional(Type.Boolean()),
      settings: Type.Optional(ClientSettingsSchema),
    },
    { additionalProperties: false, minProperties: 1 },
  ),
);

function clientResource(c: ClientRow, secrets: ClientSecretRow[], extra: { secret?: string; secretId?: string } = {}) {
  return {
    id: c.id,
    type: 'Client' as const,
    attributes: {
      name: c.name,
      disabled: c.disabled,
      settings: resolveSettings(c.settings),
      secrets: secrets.map((s) => ({ id: s.id, hint: s.hint, createdAt: s.createdAt.toISOString() })),
      ...extra,
      createdAt: c.createdAt.toISOString(),
      updatedAt: c.updatedAt.toISOString(),
    },
  };
}

const LedgerReport = resource('LedgerReport', 'LedgerReport', {
  sound: Type.Boolean(),
  violations: Type.Array(Type.Object({ rule: Type.String(), detail: Type.String() })),
  checkedAt: Timestamp(),
});

const Violation = Type.Object({ rule: Type.String(), detail: Type.String() });

const LedgerCheck = resource(
  'LedgerCheck',
  'LedgerCheck',
  {
    startedAt: Timestamp(),
    finishedAt: Timestamp(),
    durationMs: Type.Integer(),
    violationCount: Type.Integer({ description: 'How many violations the check found' }),
    violations: Type.Array(Violation, { description: 'The first 20 of them' }),
  },
  {
    description:
      'A ledger invariant check that ran: the scheduled job, in whichever process ran it, or GET /admin/v1/ledger/verify.',
  },
);

/** How many recorded checks the list shows: a day of hourly checks. */
const RECENT_CHECKS = 24;

export const schemas = [EffectiveSettingsSchema, Client, ClientSecret, LedgerReport, LedgerCheck];

export async function adminRoutes(app: App, ctx: AppContext): Promise<void> {
  const base = ctx.config.listeners.admin.publicUrl;
  const env = ctx.config.environment;

  app.post(
    '/admin/v1/clients',
    {
      schema: {
        tags: TAGS,
        operationId: 'adminCreateClient',
        summary: 'Create a client (merchant)',
        body: CreateClientBody,
        response: responses({ 201: document(ref(Client)) }, ADMIN_ERRORS),
      },
    },
    async (req, reply) => {
      const { name, settings } = req.body.data.attributes;
      const { client, secret } = await createClient(ctx.db, { name, settings, environment: env, now: ctx.clock.now() });
      return reply
        .code(201)
        .send({ data: clientResource(client, [secret.row], { secret: secret.secret, secretId: secret.row.id }) });
    },
  );

  app.get(
    '/admin/v1/clients',
    {
      schema: {
        tags: TAGS,
        operationId: 'adminListClients',
        summary: 'List clients',
        querystring: listQuery({}),
        response: responses({ 200: listDocument(ref(Client)) }, ADMIN_ERRORS),
      },
    },
    async (req) => {
      const page = pageOf(req.query);
      const { rows, total } = await listClientRows(ctx.db, page);
      const secrets = await listSecretRows(
        ctx.db,
        rows.map((r) => r.id),
      );
      return {
        data: rows.map((c) =>
          clientResource(
            c,
            secrets.filter((s) => s.clientId === c.id),
          ),
        ),
        meta: { total, ...page },
        links: pageLinks(base, req.url, page, total),
      };
    },
  );

  app.get(
    '/admin/v1/clients/:clientId',
    {
      schema: {
        tags: TAGS,
        operationId: 'adminGetClient',
        summary: 'Get a client',
        params: idParams('clientId'),
        querystring: NoQuery,
        response: responses({ 200: document(ref(Client)) }, [...ADMIN_ERRORS, 404]),
      },
    },
    async (req) => {
      const client = await getClient(ctx.db, req.params.clientId);
      return { data: clientResource(client, await listSecretRows(ctx.db, [client.id])) };
    },
  );

  app.patch(
    '/admin/v1/clients/:clientId',
    {
      schema: {
        tags: TAGS,
        operationId: 'adminUpdateClient',
        summary: 'Update a client',
        description:
          '`settings` merge into the stored settings (nested objects member by member). `disabled: true` makes every API call of the client 403.',
        params: idParams('clientId'),
        body: UpdateClientBody,
        response: responses({ 200: document(ref(Client)) }, [...ADMIN_ERRORS, 404]),
      },
    },
    async (req) => {
      const client = await updateClient(ctx.db, {
        id: req.params.clientId,
        ...req.body.data.attributes,
        now: ctx.clock.now(),
      });
      ctx.auth.invalidate(client.id);
      return { data: clientResource(client, await listSecretRows(ctx.db, [client.id])) };
    },
  );

  app.post(
    '/admin/v1/clients/:clientId/secrets',
    {
      schema: {
        tags: TAGS,
        operationId: 'adminRotateClientSecret',
        summary: 'Add a secret (rotation)',
        description: 'Old secrets stay valid until deleted.',
        params: idParams('clientId'),
        querystring: NoQuery,
        response: responses({ 201: document(ref(ClientSecret)) }, [...ADMIN_ERRORS, 404]),
      },
    },
    async (req, reply) => {
      const s = await rotateClientSecret(ctx.db, {
        clientId: req.params.clientId,
        environment: env,
        now: ctx.clock.now(),
      });
      ctx.auth.invalidate(req.params.clientId);
      return reply.code(201).send({
        data: {
          id: s.row.id,
          type: 'ClientSecret' as const,
          attributes: { secret: s.secret, hint: s.row.hint, createdAt: s.row.createdAt.toISOString() },
        },
      });
    },
  );

  app.delete(
    '/admin/v1/clients/:clientId/secrets/:secretId',
    {
      schema: {
        tags: TAGS,
        operationId: 'adminDeleteClientSecret',
        summary: 'Delete a secret',
        params: idParams('clientId', 'secretId'),
        querystring: NoQuery,
        response: responses({ 204: null }, [...ADMIN_ERRORS, 404]),
      },
    },
    async (req, reply) => {
      await removeClientSecret(ctx.db, { clientId: req.params.clientId, secretId: req.params.secretId });
      ctx.auth.invalidate(req.params.clientId);
      return reply.code(204).send();
    },
  );

  app.get(
    '/admin/v1/ledger/verify',
    {
      schema: {
        tags: TAGS,
        operationId: 'adminVerifyLedger',
        summary: 'Check every ledger invariant',
        description:
          'All postings sum to zero; each entry balances; each tracked balance equals the sum of its postings; nothing that must not be negative is; ' +
          "each wallet's pending deposits match its pending transactions; each posting's entry and account exist. Reads the whole ledger: run it off-peak. " +
          'The check is recorded with the scheduled ones (GET /admin/v1/ledger/checks).',
        querystring: NoQuery,
        response: responses({ 200: document(ref(LedgerReport)) }, ADMIN_ERRORS),
      },
    },
    async () => {
      const violations = await checkLedger(ctx.db, { log: ctx.log, now: () => ctx.clock.now() });
      return {
        data: {
          id: 'ledger',
          type: 'LedgerReport' as const,
          attributes: { sound: violations.length === 0, violations, checkedAt: ctx.clock.now().toISOString() },
        },
      };
    },
  );

  app.get(
    '/admin/v1/ledger/checks',
    {
      schema: {
        tags: TAGS,
        operationId: 'adminListLedgerChecks',
        summary: 'List the latest ledger checks',
        description: `The last ${RECENT_CHECKS} ledger invariant checks, newest first, whichever process ran them, each with its first 20 violations. Checks are kept 30 days.`,
        querystring: NoQuery,
        response: responses({ 200: document(Type.Array(ref(LedgerCheck))) }, ADMIN_ERRORS),
      },
    },
    async () => ({
      data: (await recentLedgerChecks(ctx.db, RECENT_CHECKS)).map((c) => ({
        id: String(c.id),
        type: 'LedgerCheck' as const,
        attributes: {
          startedAt: c.startedAt.toISOString(),
          finishedAt: c.finishedAt.toISOString(),
          durationMs: c.durationMs,
          violationCount: c.violations,
          violations: c.sample,
        },
      })),
    }),
  );
}
