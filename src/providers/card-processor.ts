// Port to the card processor that approves an authorization inline. Coffer calls it outside
// any database transaction with the authorization attempt's id as the reference; a processor
// must answer a repeated reference with its first answer (no second charge).
//
// The sandbox takes `latencyMs`, declines amounts whose last two digits are 02 (docs/payments.md#payments-in-detail)
// and keeps its answers in the database, so the dedupe holds across retries, processes and
// restarts, as a real processor's idempotency does.
import { eq, sql } from 'drizzle-orm';
import type { Db } from '../db/open.ts';
import { sandboxProcessorCharges } from '../db/schema.ts';

export interface ProcessorRequest {
  reference: string;
  clientId: string;
  amount: number;
  latencyMs: number;
  /** The merchant's opaque processor data (meta.processor). */
  meta?: Record<string, unknown>;
}

export interface ProcessorAnswer {
  approved: boolean;
  /** The processor's code: approved, do_not_honor, ... */
  code: string;
  /** Opaque data to hand back to the merchant. */
  data: Record<string, unknown>;
}

export interface CardProcessor {
  authorize(r: ProcessorRequest): Promise<ProcessorAnswer>;
}

export class SandboxCardProcessor implements CardProcessor {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async authorize(r: ProcessorRequest): Promise<ProcessorAnswer> {
    if (r.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, r.latencyMs));
    const outcome = r.amount % 100 === 2 ? 'do_not_honor' : 'approved';
    const [row] = await this.#db
      .insert(sandboxProcessorCharges)
      .values({ reference: r.reference, clientId: r.clientId, amount: r.amount, outcome })
      .onConflictDoUpdate({
        target: sandboxProcessorCharges.reference,
        set: { calls: sql`${sandboxProcessorCharges.calls} + 1` },
      })
      .returning();
    // A repeated reference gets the first answer, whatever this call's amount.
    const first =
      row ??
      (
        await this.#db.select().from(sandboxProcessorCharges).where(eq(sandboxProcessorCharges.reference, r.reference))
      )[0]!;
    return {
      approved: first.outcome === 'approved',
      code: first.outcome,
      data: {
        processor: 'sandbox',
        authorization: `auth_${r.reference.replace(/-/g, '').slice(0, 20)}`,
        outcome: first.outcome,
        ...(r.meta ? { echo: r.meta } : {}),
      },
    };
  }
}
