import { renderContext } from '../payments/render.ts';
import type { Module } from '../module.ts';
import { checkDueTransfers, STATUS_BATCH } from './domain.ts';

export const bankTransfers: Module = {
  name: 'bank-transfers',
  // With a bank that reports each transfer's status (every live one), transfers settle or fail
  // when it says so.
  jobs: (ctx) =>
    ctx.providers.bankTransfers.reportsStatus
      ? [
          {
            name: 'bank-transfer-status',
            intervalMs: 250,
            batch: STATUS_BATCH,
            run: () =>
              checkDueTransfers(ctx.db, {
                provider: ctx.providers.bankTransfers,
                rc: renderContext(ctx),
                now: () => ctx.clock.now(),
                log: ctx.log,
              }),
          },
        ]
      : [],
};
