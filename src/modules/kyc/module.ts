import type { Module } from '../module.ts';
import { kycRoutes } from './routes.ts';
import { schemas } from './schemas.ts';
import { decideDueKycApplications } from './domain.ts';

export const kyc: Module = {
  name: 'kyc',
  schemas,
  routes: kycRoutes,
  jobs: (ctx) => [
    {
      name: 'kyc-decisions',
      intervalMs: 200,
      // A change's events are written in the change's transaction (events.ts).
      run: () =>
        decideDueKycApplications(ctx.db, {
          provider: ctx.providers.kyc,
          now: () => ctx.clock.now(),
          baseUrl: ctx.config.listeners.api.publicUrl,
          log: ctx.log,
        }),
    },
  ],
};
