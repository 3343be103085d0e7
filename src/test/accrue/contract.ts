// Accrue's Merchant API contract as the contract test (src/test/accrue-contract.test.ts) and the
// compatibility page (scripts/accrue-doc.ts → docs/accrue-compatibility.md) read it: the 82
// operations, their response schemas, and the one table of deliberate differences.
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { EXTRA_RESPONSES } from './extra-schemas.ts';

const here = (f: string) => new URL(f, import.meta.url);

export interface Operation {
  method: string;
  /** Accrue's path as published (`:param` or `{param}`). */
  accruePath: string;
  /** The same path with `{param}` placeholders. */
  path: string;
  operationId: string;
  tag: string;
}

export const OPERATIONS: readonly Operation[] = readFileSync(here('accrue-operations.tsv'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => {
    const [method, accruePath, operationId, tag] = line.split('\t') as [string, string, string, string];
    return { method, accruePath, path: accruePath.replace(/:(\w+)/g, '{$1}').replace(/\/$/, ''), operationId, tag };
  });

const condensed = JSON.parse(readFileSync(here('accrue-condensed.json'), 'utf8')) as {
  paths: Record<string, Record<string, any>>;
};

/** Accrue's responses for an operation: status → JSON schema of the body (null: no content). */
export function accrueResponses(operationId: string): Record<string, object | null> {
  for (const [p, item] of Object.entries(condensed.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (op?.operationId !== operationId) continue;
      const out: Record<string, object | null> = {};
      for (const [status, r] of Object.entries(op.responses as Record<string, any>)) {
        out[status] = r.content
          ? {
              $ref: `accrue#/paths/${esc(p)}/${method}/responses/${status}/content/${esc('application/vnd.api+json')}/schema`,
            }
          : null;
      }
      return out;
    }
  }
  const extra = EXTRA_RESPONSES[operationId];
  if (!extra) throw new Error(`no Accrue responses for ${operationId}`);
  return extra;
}
const esc = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

// ----- violations and the differences that tolerate them -----------------------------------

/**
 * `cross-merchant`: another merchant's id on a by-id operation answered `status`, not 404.
 * `code`: an error's `code` is not the one Accrue names (the schemas leave codes open, so only
 * the error-path checks see these).
 */
export type ViolationKind = 'status' | 'schema' | 'error-document' | 'cross-merchant' | 'code';

export interface Violation {
  operationId: string;
  status: number;
  kind: ViolationKind;
  /** JSON pointer into the body (schema violations). */
  pointer: string;
  keyword: string;
  message: string;
}

export interface Difference {
  /** A short stable name. */
  id: string;
  title: string;
  /** Why Coffer differs; the decision it follows. */
  reason: string;
  /** The operations it concerns; 'all' for a rule of every operation. */
  operations: readonly string[] | 'all';
  /** What it tolerates: a violation matching every given field. */
  match: { kind: ViolationKind; status?: number; pointer?: RegExp; keyword?: string };
  /** false: no call of the contract test meets it (it is listed, not tolerated). */
  checked?: false;
}

/**
 * The deliberate differences from Accrue's published contract, each with its reason. The
 * contract test tolerates exactly these: any other violation fails, and so does an entry that
 * no longer tolerates anything for an operation it names.
 */
export const DIFFERENCES: readonly Difference[] = [
  {
    id: 'error-document',
    title: 'Errors are a JSON:API error document',
    reason:
      'Accrue\'s schemas describe an error response as one bare error object with a numeric `status`; its prose and the spec say an `errors` array. Coffer answers `{"errors":[…]}` with string `status`, as JSON:API requires ([ADR 0001](adr/0001-spec-then-accrue.md), "Kept on purpose").',
    operations: 'all',
    match: { kind: 'error-document' },
  },
  {
    id: 'not-found-across-merchants',
    title: "Another merchant's resource is 404",
    reason:
      "Where Accrue lists no 404 for an operation (it answers 400 `UserNotFound`, `InvalidIdentifier`, `InvalidRefund` and the like, or declares no failure for it), an id in the path of a resource the merchant does not have, its own unknown or another merchant's, is 404 in Coffer: existence never leaks across merchants and a resource named in the path is 404 when not found ([ADR 0002](adr/0002-wire-conventions.md)). Where Accrue declares a not-found answer that is not 404 and names no other resource (`{\"data\":null}` for a reward or a version-2 wallet widget, 400 `NoWalletFound` for a version-1 one), Coffer gives Accrue's answer, alike for its own unknown ids and another merchant's.",
    operations: [
      'authorizePayment',
      'capturePayment',
      'refund',
      'getVirtualDebitCard',
      'simulateCardAuthorizationCapture',
      'createKycApplication',
      'getKycStatus',
      'getDocumentVerificationLink',
      'completeDocumentVerification',
      'getLinkedAccountWidgetData',
      'increaseAuthorization',
      'completePayment',
    ],
    match: { kind: 'status', status: 404 },
  },
  {
    id: 'state-failures-are-402',
    title: 'A payment action refused in its state is 402 with the reason as its code',
    reason:
      "Accrue declares 402 as the only failure of authorize, capture, increase-authorization and complete (201 and 403 besides, for authorize). An intent or payment whose state does not allow the action (canceled, expired, already settled, a capture of card rails on `/capture`) therefore answers 402: the authorization or capture fails. The code says why (`IllegalOperation`, `PaymentIntentExpired`, `WalletClosed`, `InvalidKycStatus`) where Accrue names none (capture, increase, complete) or names `Failed` for every authorize failure; a client that handles Accrue's 402 handles these, and one that reads `code` learns more. A repeated authorize answers 201 with the active payment, as the first did.",
    operations: ['authorizePayment', 'capturePayment', 'increaseAuthorization', 'completePayment'],
    match: { kind: 'code', status: 402 },
  },
  {
    id: 'kyc-code',
    title: 'Money movement without KYC is InvalidKycStatus',
    reason:
      'Accrue names `NotAllowed` for a one-time deposit whose user has not passed KYC. The spec names the code for every operation that needs KYC: "An operation that needs it fails with code `InvalidKycStatus`", and the spec binds before Accrue\'s contract, so Coffer answers 400 `InvalidKycStatus`.',
    operations: ['createOneTimeDeposit'],
    match: { kind: 'code', status: 400 },
  },
  {
    id: 'challenge-not-found-400',
    title: 'An unknown challenge or token is 400 ChallengeNotFound',
    reason:
      "Accrue files `ChallengeNotFound` under 404 for a submission to an unknown challenge and for a bad or used token on a profile update. The spec's error table gives it 400 (\"400 ChallengeNotFound: invalid challenge id or verification token\"), and the spec binds before Accrue's contract, so Coffer answers 400 with Accrue's code.",
    operations: ['submitIdentityVerificationChallenge', 'applyVerifiedProfileUpdate'],
    match: { kind: 'code', status: 400 },
  },
  {
    id: 'attached-profile-answer',
    title: 'The attached-profile PATCH answers 200 with the profile',
    reason:
      'Accrue answers 204 without content. The spec\'s operation table gives this PATCH a response ("attached-profile result"), and the spec binds before Accrue\'s contract ([ADR 0001](adr/0001-spec-then-accrue.md)), so Coffer answers 200 with the updated AttachedProfile resource; a client that ignores the body of a 2xx works with either.',
    operations: ['updateUser'],
    match: { kind: 'status', status: 200 },
  },
  {
    id: 'attached-profile-unknown-reference',
    title: 'An unknown user reference is 400 InvalidIdentifier',
    reason:
      "`userReference` is a user id or either reference id. Accrue lists no 404 for the attached-profile PATCH: a reference that matches no user is its 400 `InvalidIdentifier`, and Coffer keeps Accrue's answer; another merchant's user matches none, so it gets the same answer as an id that does not exist and nothing about it leaks.",
    operations: ['updateUser'],
    match: { kind: 'cross-merchant', status: 400 },
  },
  {
    id: 'unset-members',
    title: 'Unset members Accrue requires are null',
    reason:
      "(A user's unset `profile` and `attachedProfile` members are left out: Accrue types them as strings and requires none.) A gift's virtual debit card has no billing address, so its `billingAddress` is null (Accrue requires the object); an external purchase linked to nothing has `linkedExternalTransactionId` null. Coffer has no value for them and Accrue documents none; the contract test's calls set them, so it meets none of these.",
    operations: ['getVirtualDebitCard', 'listExternalTransactions'],
    match: { kind: 'schema', keyword: 'type' },
    checked: false,
  },
  {
    id: 'card-simulation-answers',
    title: 'Card-network simulations answer what they recorded',
    reason:
      "Accrue answers the sandbox card authorization and capture with 201 and an empty object. Coffer answers 200 with the payment and the AuthorizationRequest or Capture it recorded in `included`, which sandbox tests read; a declined step is a 402 error document. (Authorization-and-capture answers 200 as Accrue does, with Accrue's `success` and `error` beside the same members.)",
    operations: ['simulateCardAuthorization', 'simulateCardCapture'],
    match: { kind: 'status', status: 200 },
  },
  {
    id: 'gift-id-is-its-reference',
    title: "A gift's id is its 19-digit reference",
    reason:
      "Accrue's `Gift` schema formats `id` as a uuid. The spec says a gift's `id` is its public reference, the string a customer presents and a merchant scans and sends back as `lookUpId`, and the spec binds before Accrue's contract ([ADR 0001](adr/0001-spec-then-accrue.md)); Coffer's references are 19 digits, which no wallet barcode (16 digits) can be mistaken for.",
    operations: ['getGiftByLookUpId'],
    match: { kind: 'schema', pointer: /^\/data\/id$/, keyword: 'format' },
  },
  {
    id: 'webhook-list',
    title: 'The webhook list is a list',
    reason:
      'Accrue\'s `WebhooksResponse` for `GET /webhooks` has one `Webhook` in `data`, where its name, its description ("Get webhooks") and every other list in the contract say an array; it reads as a slip in the schema. Coffer answers an array of webhooks with `meta` and `links`, like every list.',
    operations: ['getWebhooks'],
    match: { kind: 'schema', pointer: /^\/data$/, keyword: 'type' },
  },
];

export function differencesFor(operationId: string): Difference[] {
  return DIFFERENCES.filter((d) => d.operations === 'all' || d.operations.includes(operationId));
}

export function tolerated(v: Violation): Difference | undefined {
  return differencesFor(v.operationId).find(
    (d) =>
      d.checked !== false &&
      d.match.kind === v.kind &&
      (d.match.status === undefined || d.match.status === v.status) &&
      (d.match.pointer === undefined || d.match.pointer.test(v.pointer)) &&
      (d.match.keyword === undefined || d.match.keyword === v.keyword),
  );
}

// ----- validation --------------------------------------------------------------------------

let ajv: Ajv2020 | undefined;
function validator(): Ajv2020 {
  if (ajv) return ajv;
  ajv = new Ajv2020({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  ajv.addSchema(nullableEnums(structuredClone(condensed)), 'accrue');
  return ajv;
}

/**
 * Accrue's schemas write a nullable enum as `type: [string, 'null']` with an `enum` that lacks
 * null (OpenAPI 3.0's `nullable` carried over); read literally, no null would pass. Its intent is
 * that null is allowed, so null joins such enums.
 */
function nullableEnums<T>(node: T): T {
  if (Array.isArray(node)) node.forEach(nullableEnums);
  else if (node && typeof node === 'object') {
    const o = node as Record<string, unknown>;
    if (Array.isArray(o.type) && o.type.includes('null') && Array.isArray(o.enum) && !o.enum.includes(null))
      o.enum = [...o.enum, null];
    Object.values(o).forEach(nullableEnums);
  }
  return node;
}

/** Every way a response departs from Accrue's contract for the operation. */
export function violationsOf(operationId: string, status: number, body: unknown): Violation[] {
  const responses = accrueResponses(operationId);
  const out: Violation[] = [];
  const v = (kind: ViolationKind, pointer: string, keyword: string, message: string) =>
    out.push({ operationId, status, kind, pointer, keyword, message });
  if (!(String(status) in responses))
    v('status', '', 'status', `status ${status} is not among Accrue's (${Object.keys(responses).join(', ')})`);
  const schema = responses[String(status)];
  let subject = body;
  if (status >= 400) {
    const errors = (body as { errors?: unknown[] } | undefined)?.errors;
    if (Array.isArray(errors)) {
      v(
        'error-document',
        '',
        'errors',
        'an error document ({"errors":[…]}, string status) where Accrue shows one bare error object',
      );
      const first = errors[0] as Record<string, unknown> | undefined;
      subject = first ? { ...first, status: Number(first.status) } : first;
    }
  }
  if (schema && subject !== undefined) {
    const validate = validator().compile(schema);
    if (!validate(subject)) {
      for (const e of validate.errors ?? [])
        v('schema', e.instancePath, e.keyword, `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
    }
  }
  return out;
}

// ----- the compatibility page ------------------------------------------------------------

/** GitHub's anchor for a heading. */
const anchorOf = (title: string) =>
  title
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

/** The README's summary: per tag, Accrue's operations, those served exactly and those with a listed difference. */
export function renderCompatibilitySummary(): string {
  const tags = [...new Set(OPERATIONS.map((o) => o.tag))];
  const lines = [
    '| Area (Accrue tag) | Accrue operations | served as published | served with a listed difference |',
    '|---|---:|---:|---:|',
  ];
  let exact = 0;
  for (const tag of tags) {
    const ops = OPERATIONS.filter((o) => o.tag === tag);
    const same = ops.filter((o) => differencesFor(o.operationId).every((d) => d.operations === 'all')).length;
    exact += same;
    lines.push(`| ${tag} | ${ops.length} | ${same} | ${ops.length - same} |`);
  }
  lines.push(`| **all** | **${OPERATIONS.length}** | **${exact}** | **${OPERATIONS.length - exact}** |`);
  return lines.join('\n');
}

/** Markers around the generated summary in README.md. */
export const SUMMARY_START = '<!-- accrue-summary: generated by npm run docs:accrue -->';
export const SUMMARY_END = '<!-- /accrue-summary -->';

/** README.md with its summary block replaced by the current one. */
export function withCompatibilitySummary(readme: string): string {
  const start = readme.indexOf(SUMMARY_START);
  const end = readme.indexOf(SUMMARY_END);
  if (start < 0 || end < start) throw new Error(`README.md lacks the ${SUMMARY_START} … ${SUMMARY_END} block`);
  return `${readme.slice(0, start + SUMMARY_START.length)}\n${renderCompatibilitySummary()}\n${readme.slice(end)}`;
}

export function renderCompatibilityDoc(): string {
  const lines: string[] = [];
  const served = OPERATIONS.filter((o) => differencesFor(o.operationId).every((d) => d.operations === 'all')).length;
  lines.push(
    '# Accrue compatibility',
    '',
    '<!-- Generated by `npm run docs:accrue` (scripts/accrue-doc.ts) from src/test/accrue/contract.ts; do not edit. -->',
    '',
    `Coffer serves all ${OPERATIONS.length} operations of Accrue's Merchant API at Accrue's methods and paths, so a`,
    "merchant coded against Accrue's published contract points the same code at Coffer. The contract",
    'test (`src/test/accrue-contract.test.ts`) calls every one of them and validates each answer against',
    "Accrue's response schema for its status; the differences below are the only ones it tolerates. The",
    'choices behind them are in [ADR 0001](adr/0001-spec-then-accrue.md).',
    '',
    `${served} operations have no listed difference: each answer the contract test gets from them has a status Accrue declares and validates against Accrue's schema for it (apart from the rules every operation shares, below). ${OPERATIONS.length - served} have a listed difference.`,
    '',
    '| Operation | Tag | Accrue method and path | Coffer |',
    '|---|---|---|---|',
  );
  for (const o of OPERATIONS) {
    const own = differencesFor(o.operationId).filter((d) => d.operations !== 'all');
    const status =
      own.length === 0
        ? 'served'
        : `served with ${own.map((d) => `[${d.title.toLowerCase()}](#${anchorOf(d.title)})`).join(', ')}`;
    lines.push(`| \`${o.operationId}\` | ${o.tag} | \`${o.method} ${o.accruePath}\` | ${status} |`);
  }
  lines.push('', '## Differences', '');
  for (const d of DIFFERENCES) {
    const ops = d.operations === 'all' ? 'every operation' : d.operations.map((x) => `\`${x}\``).join(', ');
    lines.push(`### ${d.title}`, '', `Applies to: ${ops}.`, '', d.reason, '');
  }
  return lines.join('\n');
}
