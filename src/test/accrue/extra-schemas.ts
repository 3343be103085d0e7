// Accrue's response contract for the 31 operations that accrue-condensed.json (a transcription of
// the 51 operations that first overlapped Coffer's) does not carry, transcribed from Accrue's
// published OpenAPI (api-evangelist/accrue-savings, openapi/_original/… and its per-tag files),
// descriptions and examples dropped. `$ref`s of the form `accrue#/components/schemas/X` point
// into accrue-condensed.json. A status maps to a response body schema, or to null for a
// response without content.

type Schema = Record<string, unknown>;
const ref = (name: string): Schema => ({ $ref: `accrue#/components/schemas/${name}` });
const dt = { type: 'string', format: 'date-time' };
const uuid = { type: 'string', format: 'uuid' };
const str = { type: 'string' };
const int = { type: 'integer' };
const obj = (properties: Record<string, Schema>, required: string[] = []): Schema => ({
  type: 'object',
  properties,
  required,
});
const resource = (
  type: string,
  attributes: Record<string, Schema>,
  required: string[],
  more: Record<string, Schema> = {},
  moreRequired: string[] = [],
): Schema =>
  obj({ id: uuid, type: { type: 'string', enum: [type] }, attributes: obj(attributes, required), ...more }, [
    'id',
    'type',
    'attributes',
    ...moreRequired,
  ]);
const single = (data: Schema): Schema => obj({ data }, ['data']);
const list = (item: Schema): Schema =>
  obj({ data: { type: 'array', items: item }, meta: ref('ListMeta') }, ['data', 'meta']);
const bare = (item: Schema): Schema => obj({ data: { type: 'array', items: item } }, ['data']);

const AuthorizationRequest = resource(
  'AuthorizationRequest',
  {
    paymentId: uuid,
    walletId: uuid,
    status: { type: 'string', enum: ['Declined', 'Approved', 'Pending', 'Canceled'] },
    amount: int,
    createdAt: dt,
    updatedAt: dt,
  },
  ['paymentId', 'walletId', 'status', 'amount', 'createdAt', 'updatedAt'],
);
const CardCapture = obj(
  {
    id: uuid,
    type: { type: 'string', enum: ['Capture'] },
    attributes: obj({
      id: uuid,
      amount: int,
      success: { type: 'boolean' },
      method: { type: 'string', enum: ['BankRails', 'VirtualDebitCard'] },
      reference: { type: ['string', 'null'] },
      updatedAt: dt,
      createdAt: dt,
    }),
  },
  ['type', 'attributes'],
);
const DemoBackupPaymentMethod = obj(
  {
    type: { type: 'string', enum: ['DemoBackupPaymentMethod'] },
    attributes: obj(
      {
        linkedAccountId: uuid,
        accountMask: str,
        institutionName: str,
        accountType: str,
        status: str,
        updatedAt: dt,
        createdAt: dt,
      },
      ['linkedAccountId', 'accountMask', 'institutionName', 'accountType', 'status', 'updatedAt', 'createdAt'],
    ),
  },
  ['type', 'attributes'],
);
const DocumentVerificationLink = resource(
  'DocumentVerificationLink',
  { url: { type: 'string', format: 'uri' }, updatedAt: dt, createdAt: dt },
  ['url', 'updatedAt', 'createdAt'],
);
const WidgetSession = obj(
  { id: str, type: str, attributes: obj({ sessionToken: str, createdAt: dt }, ['sessionToken', 'createdAt']) },
  ['id', 'type', 'attributes'],
);
const LinkedAccountWidgetData = obj({ id: str, type: str, attributes: { type: 'object' } }, [
  'id',
  'type',
  'attributes',
]);
const CounterpartyPayout = resource(
  'CounterpartyPayout',
  {
    amount: int,
    status: {
      type: 'string',
      enum: [
        'Approved',
        'Cancelled',
        'Completed',
        'Denied',
        'Failed',
        'NeedsApproval',
        'Pending',
        'Processing',
        'Returned',
        'Reversed',
        'Sent',
      ],
    },
    description: { type: ['string', 'null'] },
    effectiveDate: str,
    counterpartyId: uuid,
    updatedAt: dt,
    createdAt: dt,
  },
  ['amount', 'status', 'description', 'effectiveDate', 'counterpartyId', 'updatedAt', 'createdAt'],
);
const CounterpartyTransfer = resource(
  'CounterpartyTransfer',
  {
    updatedAt: dt,
    createdAt: dt,
    fromCounterpartyId: uuid,
    toCounterpartyId: uuid,
    amount: { type: 'integer', minimum: 1 },
    status: { type: 'string', enum: ['Pending', 'Completed', 'Failed'] },
    idempotencyKey: { type: 'string', minLength: 1, maxLength: 255 },
    externalLedgerTransactionId: { type: ['string', 'null'] },
    failureReason: { type: ['string', 'null'] },
    metadata: { type: ['object', 'null'], additionalProperties: str },
  },
  ['updatedAt', 'createdAt'],
);
const relationList = (type: string) =>
  obj({ data: { type: 'array', items: obj({ id: uuid, type: { type: 'string', enum: [type] } }, ['id', 'type']) } }, [
    'data',
  ]);
const externalRelationships = obj({
  linkedExternalTransaction: relationList('ExternalTransaction'),
  user: relationList('User'),
});
const paymentMethod = obj(
  {
    amount: int,
    method: {
      type: 'string',
      enum: ['Cash', 'DebitCard', 'CreditCard', 'Wire', 'GiftCard', 'Wallet', 'Other', 'Unknown'],
    },
  },
  ['amount'],
);
const ExternalTransaction = resource(
  'ExternalTransaction',
  {
    linkedExternalTransactionId: { type: ['string', 'null'] },
    source: { type: 'object' },
    payments: { type: 'array', items: paymentMethod },
    payload: { type: 'object' },
    updatedAt: dt,
    createdAt: dt,
  },
  ['linkedExternalTransactionId', 'source', 'payments', 'updatedAt', 'createdAt'],
  { relationships: externalRelationships },
  ['relationships'],
);
const ExternalTransactionReference = resource(
  'ExternalTransaction',
  { id: uuid, sourceId: str, updatedAt: dt, createdAt: dt },
  ['id', 'sourceId', 'updatedAt', 'createdAt'],
  { relationships: externalRelationships },
  ['relationships'],
);
const nullableWidget = obj({ data: { anyOf: [ref('WalletWidgetData'), { type: 'null' }] } }, ['data']);
const paymentWithLinks = obj(
  { data: ref('Payment'), links: obj({ self: str }, ['self']), included: { type: 'array' } },
  ['data', 'links', 'included'],
);

/** operationId → status → body schema (null: no content). */
export const EXTRA_RESPONSES: Record<string, Record<string, Schema | null>> = {
  updatePayment: { '200': single(ref('Payment')), '400': null, '404': null },
  increaseAuthorization: {
    '200': single(
      obj({ id: uuid, type: { type: 'string', enum: ['Payment'] }, attributes: { type: 'object' } }, [
        'id',
        'type',
        'attributes',
      ]),
    ),
    '402': null,
  },
  completePayment: { '200': paymentWithLinks, '402': null },
  getAuthorizationRequestList: { '200': bare(AuthorizationRequest), '404': null },
  getCapturesList: { '200': bare(CardCapture), '404': null },
  createDemoBackupPaymentMethod: { '201': single(DemoBackupPaymentMethod), '400': null, '404': null },
  listWalletBarcodes: { '200': bare(ref('WalletBarcode')), '404': null },
  getWalletBarcode: { '200': single(ref('WalletBarcode')), '404': null },
  simulateCounterpartyDeposit: { '204': null, '400': null, '404': null },
  getDocumentVerificationLink: { '200': single(DocumentVerificationLink), '400': null, '500': null },
  completeDocumentVerification: { '200': single(ref('Kyc')), '400': null, '500': null },
  findWalletWidgetData: { '200': single(ref('WalletWidgetData')), '400': null },
  getLinkedAccountWidgetData: { '200': single(LinkedAccountWidgetData), '400': null, '500': null },
  getWalletWidgetDataV2: { '200': nullableWidget, '400': null },
  findWalletWidgetDataV2: { '200': nullableWidget, '400': null },
  createWidgetSession: { '200': single(WidgetSession), '400': null },
  addSweepstakesResults: { '201': null, '400': null, '500': null },
  listIssuedRewards: { '200': list(ref('RewardResponse')), '400': null, '500': null },
  getIssuedRewardById: {
    '200': obj({ data: { anyOf: [ref('RewardResponse'), { type: 'null' }] } }, ['data']),
    '400': null,
    '500': null,
  },
  updateReward: { '200': single(ref('RewardResponse')), '400': null, '404': null, '409': null, '500': null },
  cancelReward: { '204': null, '404': null, '409': null, '500': null },
  updateCounterparty: { '200': single(ref('Counterparty')), '400': null, '404': null, '500': null },
  deleteCounterparty: { '204': null, '404': null, '409': null, '500': null },
  createCounterpartyPayout: { '201': single(CounterpartyPayout), '400': null, '404': null, '500': null },
  listCounterpartyPayouts: { '200': list(CounterpartyPayout), '404': null, '500': null },
  createCounterpartyTransfer: { '201': single(CounterpartyTransfer), '400': null, '403': null, '404': null },
  listCounterpartyTransfers: { '200': list(CounterpartyTransfer), '400': null },
  getCounterpartyTransfer: { '200': single(CounterpartyTransfer), '404': null },
  addExternalTransactions: { '200': bare(ExternalTransactionReference), '400': null, '500': null },
  listExternalTransactions: { '200': list(ExternalTransaction), '400': null, '500': null },
  getExternalTransaction: { '200': single(ExternalTransaction), '404': null, '500': null },
};
