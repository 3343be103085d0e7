import { type Api, type Attributes, body, unwrap } from './shared.ts';

/** A sweepstakes' results: which of your users are in them (`sweepstakesId` is your own label). */
export const sweepstakes = (api: Api) => ({
  addResult: (sweepstakesId: string, a: Attributes<'/api/v1/sweepstakes/{sweepstakesId}/results'>) =>
    unwrap(
      api.POST('/api/v1/sweepstakes/{sweepstakesId}/results', {
        params: { path: { sweepstakesId } },
        body: body('SweepstakesResults', a),
      }),
    ),
});
