import type { CaptureRow, CardAuthorizationRow, PaymentRow, RefundRow } from './sql.ts';
import type { AppContext } from '../../context.ts';
import { isoTime, isoTimeOrNull } from '../../timestamps.ts';

export interface RenderContext {
  baseUrl: string;
  secureUrl: string;
}

export function renderContext(ctx: AppContext): RenderContext {
  return { baseUrl: ctx.config.listeners.api.publicUrl, secureUrl: ctx.config.listeners.card.publicUrl };
}

export function paymentResource(
  p: PaymentRow,
  c: RenderContext,
  opts: { refunds?: RefundRow[]; captures?: CaptureRow[]; withProcessor?: boolean } = {},
) {
  return {
    id: p.id,
    type: 'Payment' as const,
    attributes: {
      id: p.id,
      status: p.status as 'Created',
      amount: p.amount,
      capturedAmount: p.capturedAmount,
      refundedAmount: p.refundedAmount,
      rail: p.rail as 'bank' | 'card' | 'gift',
      channel: p.channel,
      reference: p.reference,
      disbursement: p.disbursement,
      externalPayments: p.externalPayments,
      failureReason: p.failureReason,
      expiresAt: isoTime(p.expiresAt),
      updatedAt: isoTime(p.updatedAt),
      createdAt: isoTime(p.createdAt),
    },
    relationships: {
      paymentIntent: p.intentId
        ? {
            data: { type: 'PaymentIntent' as const, id: p.intentId },
            links: { self: `${c.baseUrl}/api/v1/payment-intents/${p.intentId}` },
          }
        : { data: null },
      ...(opts.refunds ? { refunds: { data: opts.refunds.map((r) => ({ type: 'Refund' as const, id: r.id })) } } : {}),
      ...(opts.captures
        ? { captures: { data: opts.captures.map((x) => ({ type: 'Capture' as const, id: x.id })) } }
        : {}),
    },
    links: {
      self: `${c.baseUrl}/api/v1/payments/${p.id}`,
      // Accrue requires the link on every payment; a bank-rail payment's answers 404 CardNotFound.
      virtualDebitCard: `${c.secureUrl}/api/v1/payments/${p.id}/card`,
    },
    ...(opts.withProcessor && p.processor ? { meta: { processor: p.processor } } : {}),
  };
}

export function refundResource(r: RefundRow) {
  return {
    id: r.id,
    type: 'Refund' as const,
    // A refund returns the money when it is made (Accrue's `Sent`); Coffer never produces the others.
    attributes: {
      paymentId: r.paymentId,
      amount: r.amount,
      status: 'Sent' as const,
      returned: r.returned,
      updatedAt: isoTime(r.createdAt),
      createdAt: isoTime(r.createdAt),
    },
  };
}

export function captureResource(c: CaptureRow) {
  return {
    id: c.id,
    type: 'Capture' as const,
    attributes: {
      id: c.id,
      paymentId: c.paymentId,
      amount: c.amount,
      success: c.success,
      method: c.method,
      reference: c.reference,
      authorizationRequestId: c.authorizationId,
      capturedAt: isoTimeOrNull(c.capturedAt),
      updatedAt: isoTime(c.updatedAt),
      createdAt: isoTime(c.createdAt),
    },
  };
}

export function authorizationRequestResource(a: CardAuthorizationRow, walletId: string | null) {
  return {
    id: a.id,
    type: 'AuthorizationRequest' as const,
    attributes: {
      paymentId: a.paymentId,
      walletId,
      status: a.status as 'Approved',
      amount: a.amount,
      createdAt: isoTime(a.createdAt),
      updatedAt: isoTime(a.updatedAt),
    },
  };
}
