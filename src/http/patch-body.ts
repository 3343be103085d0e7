// Update bodies (docs/adr/0001-spec-then-accrue.md, JSON:API 1.1): `{data: {id?, type, attributes}}`, and, where
// Accrue's contract sends it so, the same without the `data` wrapper. An `id` in the body must
// be the path's id, else 409 Conflict and nothing changes.
import type { FastifyReply, FastifyRequest, FastifySchemaCompiler } from 'fastify';
import { Type, type TObject } from 'typebox';
import { ApiError, apiError } from './errors.ts';
import { Uuid } from './schemas.ts';
import { validatorCompiler } from './validation.ts';

/** The wrapped and the bare shape of an update body of `type` (or any of several names). */
export function updateBodies<A extends TObject>(type: string | string[], attributes: A) {
  const types = Array.isArray(type) ? type : [type];
  const typeSchema = types.length === 1 ? Type.Literal(types[0]!) : Type.Union(types.map((t) => Type.Literal(t)));
  const inner = {
    id: Type.Optional(Uuid({ description: "When present, must be the path's id (else 409 Conflict)" })),
    type: typeSchema,
    attributes,
  };
  return {
    wrapped: Type.Object(
      { data: Type.Object(inner, { additionalProperties: false }) },
      { additionalProperties: false },
    ),
    bare: Type.Object(inner, { additionalProperties: false }),
  };
}

/** 409 Conflict when the body names another resource than the path (checked after the 404). */
export function checkBodyId(bodyId: string | undefined, pathId: string): void {
  if (bodyId !== undefined && bodyId.toLowerCase() !== pathId.toLowerCase()) {
    throw apiError('Conflict', `The body's id ${bodyId} is not the id in the path (${pathId}); nothing was changed.`, {
      pointer: '/data/id',
    });
  }
}

type Flagged = FastifyRequest & { bareBody?: boolean };

/**
 * Route options for a body accepted with or without its `data` wrapper: a bare body is wrapped
 * before validation (the handler always sees `{data}`), and error pointers lose their `/data`
 * prefix again, so they point into the body as sent.
 */
export function wrappedOrBare(bodies: { wrapped: TObject; bare: TObject }) {
  const wrappedValidator = (validatorCompiler as FastifySchemaCompiler<unknown>)({
    schema: bodies.wrapped,
    method: 'PATCH',
    url: '',
    httpPart: 'body',
  });
  return {
    body: Type.Union([bodies.wrapped, bodies.bare]),
    options: {
      validatorCompiler: ((route) =>
        route.httpPart === 'body' ? wrappedValidator : validatorCompiler(route)) as FastifySchemaCompiler<unknown>,
      preValidation: async (req: FastifyRequest) => {
        const body = req.body as Record<string, unknown> | undefined;
        if (body && typeof body === 'object' && !Array.isArray(body) && !('data' in body)) {
          (req as Flagged).bareBody = true;
          req.body = { data: body };
        }
      },
      errorHandler: (err: unknown, req: FastifyRequest, reply: FastifyReply) => {
        if ((req as Flagged).bareBody) unwrapPointers(err);
        return reply.send(err);
      },
    },
  };
}

function unwrapPointers(err: unknown): void {
  if (err instanceof ApiError) {
    for (const i of err.items) if (i.source?.pointer?.startsWith('/data')) i.source.pointer = i.source.pointer.slice(5);
  }
  const v = (err as { validation?: { instancePath: string }[] }).validation;
  if (Array.isArray(v))
    for (const e of v) if (e.instancePath.startsWith('/data')) e.instancePath = e.instancePath.slice(5);
}
