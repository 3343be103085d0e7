import { type Api, type Attributes, body, type KeyOptional, type Query, unwrap } from './shared.ts';

export const rewards = (api: Api) => ({
  /** Issue a merchant reward. Without `idempotencyKey` one is made and reused by every retry. */
  issue: (a: KeyOptional<Attributes<'/api/v1/rewards'>>) =>
    unwrap(api.POST('/api/v1/rewards', { body: body('IssueReward', a) as never })).then((r) => r.data),
  /** `null` for an unknown reward (Accrue's answer), not a 404. */
  get: (rewardId: string) =>
    unwrap(api.GET('/api/v1/rewards/{id}', { params: { path: { id: rewardId } } })).then((r) => r.data),
  /** One page, with `meta.total` (`coffer.paginate` walks them all). */
  list: (query: Query<'listIssuedRewards'> = {}) => unwrap(api.GET('/api/v1/rewards', { params: { query } })),
  update: (rewardId: string, a: Attributes<'/api/v1/rewards/{id}', 'patch'>) =>
    unwrap(
      api.PATCH('/api/v1/rewards/{id}', { params: { path: { id: rewardId } }, body: body('Reward', a) as never }),
    ).then((r) => r.data),
  /** While `canCancel`; a credited reward gives back what is still in the wallet. */
  cancel: (rewardId: string) => unwrap(api.DELETE('/api/v1/rewards/{id}', { params: { path: { id: rewardId } } })),
});
