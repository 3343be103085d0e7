import type { Module } from '../module.ts';
import { paymentIntentRoutes } from './routes.ts';
import { schemas } from './schemas.ts';
import { renderContext } from '../payments/render.ts';
import { authorizeDeps, recoverAttempts } from './authorize.ts';
import { expireIntents } from './domain.ts';

export const paymentIntents: Module = {
  name: 'payment-intents',
  schemas,
  routes: paymentIntentRoutes,
  jobs: (ctx) => [
    {
      name: 'payment-intent-expiry',
      intervalMs: 1_000,
      run: () => expireIntents(ctx.db, { rc: renderContext(ctx), now: () => ctx.clock.now() }),
    },
    { name: 'authorization-recovery', intervalMs: 5_000, run: () => recoverAttempts(authorizeDeps(ctx)) },
  ],
};
