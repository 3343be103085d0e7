import type { Module } from '../module.ts';
import { rewardRoutes, schemas } from './routes.ts';
import { EXPIRY_BATCH, expireRewardClaims } from './domain.ts';

export const rewards: Module = {
  name: 'rewards',
  schemas,
  routes: rewardRoutes,
  jobs: (ctx) => [
    {
      name: 'reward-claim-expiry',
      intervalMs: 60_000,
      batch: EXPIRY_BATCH,
      run: () =>
        expireRewardClaims(ctx.db, { baseUrl: ctx.config.listeners.api.publicUrl, now: () => ctx.clock.now() }),
    },
  ],
};
