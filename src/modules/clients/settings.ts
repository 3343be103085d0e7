// Per-merchant settings (docs/operations.md#merchants-and-their-settings). Stored as given; read through resolveSettings, which
// fills the defaults, so a default can change without rewriting rows.
import { Type, type Static } from 'typebox';
import { apiError } from '../../http/errors.ts';
import { Cents, Nullable, Uuid } from '../../http/schemas.ts';

const Lit = <T extends string>(...v: T[]) => Type.Enum(v);

const WidgetSettingsSchema = Type.Object(
  {
    iconUrl: Type.Optional(Nullable(Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048 }))),
    textStyle: Type.Optional(Lit('default', 'small', 'semibold', 'small-semibold')),
    successTitle: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
    successDescription: Type.Optional(
      Type.String({ minLength: 1, maxLength: 300, description: '`<reward>` is replaced by the reward amount' }),
    ),
    buttonText: Type.Optional(Type.String({ minLength: 1, maxLength: 60 })),
    togglePosition: Type.Optional(Lit('left', 'right')),
    toggleStyle: Type.Optional(Lit('checkbox', 'switch')),
    showToggleLabel: Type.Optional(Type.Boolean()),
    buttonType: Type.Optional(Lit('button', 'link')),
  },
  { additionalProperties: false },
);

export const ClientSettingsSchema = Type.Object(
  {
    captureMode: Type.Optional(Lit('automatic', 'manual')),
    rails: Type.Optional(Lit('bank', 'card')),
    cardProcessor: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(Type.Boolean()),
          latencyMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 60_000 })),
        },
        { additionalProperties: false },
      ),
    ),
    achFee: Type.Optional(Cents({ maximum: 100_000 })),
    feeCounterpartyId: Type.Optional(Nullable(Uuid())),
    depositRewardBps: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000 })),
    rewardMinimumPurchase: Type.Optional(Cents()),
    maxOneTimeDeposit: Type.Optional(Cents({ minimum: 100 })),
    maxPaymentAmount: Type.Optional(
      Cents({
        minimum: 1,
        description:
          'The largest amount, in cents, of a payment intent, a direct payment or a withdrawal (400 `AmountTooLarge` above it)',
      }),
    ),
    bankFundingLimit: Type.Optional(Cents()),
    paymentIntentTtlSeconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 30 * 86_400 })),
    widget: Type.Optional(WidgetSettingsSchema),
  },
  { additionalProperties: false },
);

export type ClientSettingsInput = Static<typeof ClientSettingsSchema>;

/** What reads return: every setting, defaults filled in. */
export const EffectiveSettingsSchema = Type.Object(
  {
    captureMode: Lit('automatic', 'manual'),
    rails: Lit('bank', 'card'),
    cardProcessor: Type.Object({ enabled: Type.Boolean(), latencyMs: Type.Integer() }),
    achFee: Type.Integer(),
    feeCounterpartyId: Nullable(Type.String()),
    depositRewardBps: Type.Integer(),
    rewardMinimumPurchase: Type.Integer(),
    maxOneTimeDeposit: Type.Integer(),
    maxPaymentAmount: Type.Integer(),
    bankFundingLimit: Type.Integer(),
    paymentIntentTtlSeconds: Type.Integer(),
    widget: Type.Object({
      iconUrl: Nullable(Type.String()),
      textStyle: Lit('default', 'small', 'semibold', 'small-semibold'),
      successTitle: Type.String(),
      successDescription: Type.String(),
      buttonText: Type.String(),
      togglePosition: Lit('left', 'right'),
      toggleStyle: Lit('checkbox', 'switch'),
      showToggleLabel: Type.Boolean(),
      buttonType: Lit('button', 'link'),
    }),
  },
  { $id: 'ClientSettings' },
);

export interface WidgetSettings {
  iconUrl: string | null;
  textStyle: 'default' | 'small' | 'semibold' | 'small-semibold';
  successTitle: string;
  successDescription: string;
  buttonText: string;
  togglePosition: 'left' | 'right';
  toggleStyle: 'checkbox' | 'switch';
  showToggleLabel: boolean;
  buttonType: 'button' | 'link';
}

export interface ClientSettings {
  captureMode: 'automatic' | 'manual';
  rails: 'bank' | 'card';
  cardProcessor: { enabled: boolean; latencyMs: number };
  achFee: number;
  feeCounterpartyId: string | null;
  depositRewardBps: number;
  rewardMinimumPurchase: number;
  maxOneTimeDeposit: number;
  maxPaymentAmount: number;
  bankFundingLimit: number;
  paymentIntentTtlSeconds: number;
  widget: WidgetSettings;
}

const DEFAULT_WIDGET: WidgetSettings = {
  iconUrl: null,
  textStyle: 'default',
  successTitle: 'Payment complete',
  successDescription: 'Your rewards covered <reward> of this purchase.',
  buttonText: 'Pay with wallet',
  togglePosition: 'right',
  toggleStyle: 'switch',
  showToggleLabel: true,
  buttonType: 'button',
};

const DEFAULT_SETTINGS: ClientSettings = {
  captureMode: 'manual',
  rails: 'bank',
  cardProcessor: { enabled: false, latencyMs: 2000 },
  achFee: 0,
  feeCounterpartyId: null,
  depositRewardBps: 0,
  rewardMinimumPurchase: 0,
  maxOneTimeDeposit: 1_000_000,
  // $1,000,000: a typo'd amount is refused rather than charged; raise it per merchant.
  maxPaymentAmount: 100_000_000,
  bankFundingLimit: 500_000,
  paymentIntentTtlSeconds: 900,
  widget: DEFAULT_WIDGET,
};

export function resolveSettings(stored: ClientSettingsInput | Record<string, unknown>): ClientSettings {
  const s = stored as ClientSettingsInput;
  return {
    ...DEFAULT_SETTINGS,
    ...stripUndefined(s),
    cardProcessor: { ...DEFAULT_SETTINGS.cardProcessor, ...stripUndefined(s.cardProcessor ?? {}) },
    widget: { ...DEFAULT_WIDGET, ...stripUndefined(s.widget ?? {}) },
  } as ClientSettings;
}

/** PATCH semantics: nested objects merge member by member; other values replace. */
export function mergeSettings(stored: ClientSettingsInput, patch: ClientSettingsInput): ClientSettingsInput {
  const out: Record<string, unknown> = { ...stored };
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    const prev = out[k];
    out[k] = v !== null && typeof v === 'object' && prev !== null && typeof prev === 'object' ? { ...prev, ...v } : v;
  }
  return out as ClientSettingsInput;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Refuses an amount above the merchant's `maxPaymentAmount` (400 `AmountTooLarge`), naming the
 * limit and how an operator raises it. `what` names the amount in the detail.
 */
export function refuseOverMaxAmount(amount: number, settings: ClientSettings, pointer: string, what = 'amount'): void {
  const max = settings.maxPaymentAmount;
  if (amount <= max) return;
  throw apiError(
    'AmountTooLarge',
    `The ${what} (${amount} cents) is above this merchant's maxPaymentAmount of ${max} cents. ` +
      'An operator can raise it with PATCH /admin/v1/clients/{clientId} {"data":{"attributes":{"settings":{"maxPaymentAmount":CENTS}}}}.',
    { pointer },
  );
}
