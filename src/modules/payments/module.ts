import type { Module } from '../module.ts';
import { paymentRoutes, paymentSimulationRoutes } from './routes.ts';
import { schemas } from './schemas.ts';
import { expireAuthorizations, PAYMENT_PULL_BATCH, sendPaymentPulls, SETTLE_BATCH, settlementJob } from './domain.ts';
import { renderContext } from './render.ts';
import { foldPaymentRollup } from './sql.ts';

/** Delta rows folded per run of console-payment-rollup (a full batch runs the next at once). */
const ROLLUP_BATCH = 10_000;

export const payments: Module = {
  name: 'payments',
  schemas,
  routes: paymentRoutes,
  simulationRoutes: paymentSimulationRoutes,
  jobs: (ctx) => {
    const rc = renderContext(ctx);
    const now = () => ctx.clock.now();
    const bank = ctx.providers.bankTransfers;
    // Captured payments settle at their settlement time, except (with a bank that reports status,
    // as every live one does) those with a bank part: that is pulled, and they settle or fail when
    // the bank reports (modules/bank-transfers).
    const reported = bank.reportsStatus;
    return [
      { name: 'authorization-expiry', intervalMs: 60_000, run: () => expireAuthorizations(ctx.db, { rc, now }) },
      {
        name: 'payment-settlement',
        intervalMs: 500,
        batch: SETTLE_BATCH,
        run: settlementJob(ctx.db, { rc, now, withoutBankPart: reported }),
      },
      ...(reported
        ? [
            {
              name: 'payment-pulls',
              intervalMs: 250,
              batch: PAYMENT_PULL_BATCH,
              run: () => sendPaymentPulls(ctx.db, { provider: bank, now, log: ctx.log }),
            },
          ]
        : []),
      // The console's charts: what statements on payments changed (appended by triggers) folded
      // into the hourly rollup; charts read both, so this keeps the deltas short, not the charts exact.
      {
        name: 'console-payment-rollup',
        intervalMs: 1_000,
        batch: ROLLUP_BATCH,
        run: () => foldPaymentRollup(ctx.db, ROLLUP_BATCH),
      },
    ];
  },
};
