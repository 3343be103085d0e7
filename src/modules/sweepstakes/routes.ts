import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { query } from '../../http/paging.ts';
import { COMMON_ERRORS, requestBody, responses } from '../../http/schemas.ts';
import type { App } from '../../http/server.ts';
import { addSweepstakesResult } from './domain.ts';

const SweepstakesParams = Type.Object(
  {
    sweepstakesId: Type.String({
      minLength: 1,
      maxLength: 128,
      pattern: '^[A-Za-z0-9._:-]+$',
      'x-pattern-hint': 'letters, digits, `.`, `_`, `:` or `-`',
    }),
  },
  { additionalProperties: false },
);

const SweepstakesResultsBody = requestBody(
  'SweepstakesResults',
  Type.Object(
    {
      customer: Type.Object(
        {
          idType: Type.Optional(Type.Enum(['ID', 'PhoneNumber'], { description: 'Default PhoneNumber' })),
          id: Type.String({
            minLength: 1,
            maxLength: 255,
            description: "PhoneNumber: the user's phone number; ID: the user's id or one of its reference ids",
          }),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  ),
);

export async function sweepstakesRoutes(app: App, ctx: AppContext): Promise<void> {
  app.post(
    '/api/v1/sweepstakes/:sweepstakesId/results',
    {
      schema: {
        tags: ['Sweepstakes'],
        operationId: 'addSweepstakesResults',
        summary: "Add a customer to a sweepstakes' results",
        description:
          'Records that the customer (one of your users, by phone number or by id) is in the results of your sweepstakes `sweepstakesId` (your own label). ' +
          'Recording the same customer again changes nothing (still 201). A customer that is not one of your users is 400 `UserNotFound`. ' +
          'Results move no money; reward a winner with POST /api/v1/rewards.',
        params: SweepstakesParams,
        querystring: query({}),
        body: SweepstakesResultsBody,
        response: responses({ 201: null }, COMMON_ERRORS),
      },
    },
    async (req, reply) => {
      await addSweepstakesResult(ctx.db, {
        clientId: req.client.id,
        sweepstakesId: req.params.sweepstakesId,
        customer: req.body.data.attributes.customer,
        now: ctx.clock.now(),
      });
      return reply.code(201).send();
    },
  );
}
