// Accrue's contract (docs/adr/0001-spec-then-accrue.md): every one of Accrue's 82 Merchant API operations is called at
// Accrue's method and path with a request in Accrue's shape, for resources a merchant creates
// first through the API, and each answer is validated against Accrue's response schema for its
// status. The only departures tolerated are the differences listed in src/test/accrue/contract.ts
// (each with its reason); an entry that no longer tolerates anything fails too. Every by-id
// operation also answers 404 to another merchant (or the not-found answer Accrue declares). The
// error paths changed for Accrue's contract are called too, and their status and code checked.
// docs/accrue-compatibility.md is generated from the same table and must be current.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import {
  DIFFERENCES,
  OPERATIONS,
  renderCompatibilityDoc,
  withCompatibilitySummary,
  tolerated,
  violationsOf,
  type Difference,
  type Violation,
} from './accrue/contract.ts';
import { dateLabel } from '../modules/identity/questions.ts';
import { accrueKycApplication } from './fixtures.ts';
import { createTestApp, JSONAPI, phone, uniqueEmail, type Merchant, type Response, type TestApp } from './harness.ts';

type Params = Record<string, string>;
interface Call {
  as: Merchant;
  params?: Params;
  query?: string;
  body?: unknown;
  /** The status this step expects (one of Accrue's, or one a listed difference tolerates). */
  expect?: number;
}

/**
 * Operations whose not-found answer Accrue declares (and Coffer gives, alike for another
 * merchant's id): the status, and the code (`null`: a 200 whose `data` is null).
 */
const ACCRUE_NOT_FOUND: Record<string, [number, string | null]> = {
  getWalletWidgetData: [400, 'NoWalletFound'],
  getWalletWidgetDataV2: [200, null],
  getIssuedRewardById: [200, null],
};

/** Path parameters that do not name a merchant's resource (no cross-merchant 404 to check). */
const NOT_A_RESOURCE: Record<string, string[]> = {
  addSweepstakesResults: ['sweepstakesId'],
  clearPendingTransactions: ['type'],
};

describe("Accrue's contract: every operation", () => {
  let t: TestApp;
  let bank: Merchant; // the bank rails (default settings)
  let card: Merchant; // the card rails
  let other: Merchant;
  const covered = new Set<string>();
  const untolerated: Violation[] = [];
  const used = new Map<string, Set<string>>(); // difference id → operations it tolerated something for
  const crossMerchant: string[] = [];

  before(async () => {
    t = await createTestApp();
    bank = await t.createMerchant();
    card = await t.createMerchant({ rails: 'card' });
    other = await t.createMerchant();
  });
  after(() => t.close());

  function urlOf(
    operationId: string,
    params: Params = {},
    query = '',
  ): { op: (typeof OPERATIONS)[number]; url: string } {
    const op = OPERATIONS.find((o) => o.operationId === operationId);
    assert.ok(op, `unknown operation ${operationId}`);
    const url = op.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      assert.ok(params[name] !== undefined, `${operationId}: no value for {${name}}`);
      return encodeURIComponent(params[name]!);
    });
    return { op, url: url + query };
  }

  async function send(
    operationId: string,
    as: Merchant,
    params: Params | undefined,
    query: string | undefined,
    body: unknown,
  ): Promise<Response> {
    const { op, url } = urlOf(operationId, params, query);
    if (operationId === 'getVirtualDebitCard') {
      // Served on the secure card listener (SECURE_URL), where a Payment's links.virtualDebitCard points.
      const res = await t.card.inject({ method: 'GET', url, headers: as.headers });
      return {
        status: res.statusCode,
        headers: res.headers,
        body: res.body ? JSON.parse(res.body) : undefined,
        raw: res.body,
      };
    }
    return t.request(op.method, url, { as, ...(body !== undefined ? { body } : {}) });
  }

  function judge(operationId: string, res: Response) {
    for (const v of violationsOf(operationId, res.status, res.body)) {
      const d = tolerated(v);
      if (d) (used.get(d.id) ?? used.set(d.id, new Set()).get(d.id)!).add(operationId);
      else untolerated.push(v);
    }
  }

  /** Calls an operation as Accrue's clients do; returns the response after judging it. */
  async function call(operationId: string, c: Call): Promise<Response> {
    const { op } = urlOf(operationId, c.params, c.query);
    const ids = [...op.path.matchAll(/\{(\w+)\}/g)]
      .map((m) => m[1]!)
      .filter((n) => !NOT_A_RESOURCE[operationId]?.includes(n));
    if (ids.length > 0) {
      const res = await send(operationId, other, c.params, c.query, c.body);
      const declared = ACCRUE_NOT_FOUND[operationId];
      if (declared) {
        const [status, code] = declared;
        const answered = code === null ? res.body?.data === null : res.body?.errors?.[0]?.code === code;
        if (res.status === status && answered) judge(operationId, res);
        else crossMerchant.push(`${operationId}: another merchant got ${res.status} ${res.raw.slice(0, 200)}`);
      } else if (res.status === 404) judge(operationId, res);
      else {
        const v: Violation = {
          operationId,
          status: res.status,
          kind: 'cross-merchant',
          pointer: '',
          keyword: 'status',
          message: res.raw.slice(0, 200),
        };
        const d = tolerated(v);
        if (d) (used.get(d.id) ?? used.set(d.id, new Set()).get(d.id)!).add(operationId);
        else crossMerchant.push(`${operationId}: another merchant got ${res.status} ${res.raw.slice(0, 200)}`);
      }
    }
    const res = await send(operationId, c.as, c.params, c.query, c.body);
    covered.add(operationId);
    judge(operationId, res);
    if (c.expect !== undefined) assert.equal(res.status, c.expect, `${operationId}: ${res.raw.slice(0, 500)}`);
    else assert.ok(res.status < 300, `${operationId}: ${res.status} ${res.raw.slice(0, 500)}`);
    if (res.status !== 204 && res.raw.length > 0) assert.equal(res.headers['content-type'], JSONAPI, operationId);
    return res;
  }

  const kycApproved = async (m: Merchant, userId: string, email: string) => {
    await call('acceptKycDisclosureDocuments', { as: m, params: { userId }, expect: 204 });
    await call('createKycApplication', { as: m, params: { userId }, body: accrueKycApplication(email) });
    t.clock.advance(500);
    for (let i = 0; i < 10; i++) {
      await t.ctx.jobs.runOnce('kyc-decisions');
      const kyc = await call('getKycStatus', { as: m, params: { userId } });
      if (kyc.body.data.attributes.status !== 'Pending') return kyc.body.data.attributes.status as string;
    }
    return 'Pending';
  };

  const createUserOp = (m: Merchant, attributes: Record<string, unknown> = {}) =>
    call('createUser', {
      as: m,
      body: {
        data: {
          type: 'User',
          attributes: {
            email: uniqueEmail('accrue'),
            phoneNumber: phone(),
            firstName: 'Ada',
            lastName: 'Lovelace',
            ...attributes,
          },
        },
      },
      expect: 201,
    });

  const linkAccount = async (m: Merchant, userId: string) => {
    const res = await t.request('POST', `/api/v1/simulation/users/${userId}/linked-accounts`, {
      as: m,
      body: { data: { type: 'LinkedAccount', attributes: { accountMask: '4321', institutionName: 'Chase' } } },
    });
    assert.equal(res.status, 201, res.raw);
    return res.body.data.id as string;
  };

  /** An approved user with a linked account and a wallet holding `amount` cleared cents, through Accrue's operations. */
  async function funded(m: Merchant, amount: number) {
    const email = uniqueEmail('funded');
    const user = (await createUserOp(m, { email })).body.data;
    assert.equal(await kycApproved(m, user.id, email), 'Approved');
    const accountId = await linkAccount(m, user.id);
    const wallet = (
      await call('createWallet', {
        as: m,
        body: { data: { type: 'Wallet', attributes: { userId: user.id } } },
        expect: 201,
      })
    ).body.data;
    const dep = await call('createOneTimeDeposit', {
      as: m,
      params: { walletId: wallet.id },
      body: {
        data: {
          type: 'OneTimeDeposit',
          attributes: { amount, idempotencyKey: randomUUID(), linkedAccountId: accountId },
        },
      },
      expect: 201,
    });
    await call('clearPendingTransactions', { as: m, params: { walletId: wallet.id, type: 'bank' }, expect: 204 });
    return { user, accountId, wallet, depositId: dep.body.data.id as string };
  }

  const intent = async (m: Merchant, walletId: string, amount: number) =>
    (
      await call('createPaymentIntent', {
        as: m,
        body: { data: { type: 'CreatePaymentIntent', attributes: { amount, walletId } } },
        expect: 201,
      })
    ).body.data.id as string;

  const authorize = async (m: Merchant, intentId: string, amount: number) => {
    const res = await call('authorizePayment', {
      as: m,
      params: { paymentIntentId: intentId },
      body: {
        data: {
          type: 'AuthorizePaymentIntent',
          attributes: {
            amount,
            reference: `order-${randomUUID().slice(0, 8)}`,
            channel: { type: 'Store', id: 'nyc-store-1' },
            risk: { deviceSessionId: 'dev-1' },
          },
        },
      },
      expect: 201,
    });
    return res.body.included[0].id as string;
  };

  test('users, KYC, identity verification, wallets and their money', async () => {
    // Users
    const email = uniqueEmail('ada');
    const user = (await createUserOp(bank, { email })).body.data;
    await call('listUsers', { as: bank });
    await call('getUser', { as: bank, params: { userId: user.id } });
    await call('updateUser', {
      as: bank,
      params: { userReference: user.id },
      body: {
        id: user.id,
        type: 'AttachedProfile',
        attributes: { referenceId: `ref-${user.id}`, stableReferenceId: `stable-${user.id}` },
      },
    });
    assert.equal(await kycApproved(bank, user.id, email), 'Approved');

    // Document verification: a user the sandbox asks for documents
    const docsEmail = `${randomUUID().slice(0, 8)}@highrisk.test`;
    const docsUser = (await createUserOp(bank, { email: docsEmail })).body.data;
    assert.equal(await kycApproved(bank, docsUser.id, docsEmail), 'AwaitingDocuments');
    await call('getDocumentVerificationLink', {
      as: bank,
      params: { userId: docsUser.id },
      body: {
        data: { type: 'DocumentVerificationLink', attributes: { redirectUrl: 'https://merchant.example/done' } },
      },
    });
    await call('completeDocumentVerification', { as: bank, params: { userId: docsUser.id } });

    // Wallets and money
    const accountId = await linkAccount(bank, user.id);
    const wallet = (
      await call('createWallet', {
        as: bank,
        body: { data: { type: 'Wallet', attributes: { userId: user.id } } },
        expect: 201,
      })
    ).body.data;
    await call('getWallet', { as: bank, params: { walletId: wallet.id } });
    await call('listWallets', { as: bank });
    const dep = await call('createOneTimeDeposit', {
      as: bank,
      params: { walletId: wallet.id },
      body: {
        data: {
          type: 'OneTimeDeposit',
          attributes: { amount: 5000, idempotencyKey: randomUUID(), linkedAccountId: accountId },
        },
      },
      expect: 201,
    });
    await call('clearPendingTransactions', { as: bank, params: { walletId: wallet.id, type: 'bank' }, expect: 204 });
    await call('getWalletBalance', { as: bank, params: { walletId: wallet.id } });
    await call('listTransactions', { as: bank, params: { walletId: wallet.id } });
    await call('getTransaction', { as: bank, params: { walletId: wallet.id, transactionId: dep.body.data.id } });
    const pending = await call('createOneTimeDeposit', {
      as: bank,
      params: { walletId: wallet.id },
      body: {
        data: {
          type: 'OneTimeDeposit',
          attributes: { amount: 200, idempotencyKey: randomUUID(), linkedAccountId: accountId },
        },
      },
      expect: 201,
    });
    await call('failPendingTransaction', {
      as: bank,
      params: { walletId: wallet.id },
      body: {
        data: {
          type: 'FailPendingTransaction',
          attributes: { transactionId: pending.body.data.id, reason: 'InsufficientFunds' },
        },
      },
      expect: 204,
    });
    await call('closedLoopWithdraw', {
      as: bank,
      params: { walletId: wallet.id },
      body: { data: { type: 'Withdraw', attributes: { amount: 100 } } },
      expect: 201,
    });

    // Barcodes
    const barcode = (
      await call('generateWalletBarcode', {
        as: bank,
        params: { walletId: wallet.id },
        body: { data: { type: 'GenerateWalletBarcode', attributes: { usageLimit: 5 } } },
        expect: 201,
      })
    ).body.data.attributes.lookUpId as string;
    await call('listWalletBarcodes', { as: bank, params: { walletId: wallet.id } });
    await call('getWalletBarcode', { as: bank, params: { lookUpId: barcode } });
    await call('getWalletByBarcode', { as: bank, params: { lookUpId: barcode } });

    // Identity verification
    const challenge = (
      await call('createIdentityVerificationChallenge', { as: bank, params: { userIdentifier: user.id } })
    ).body.data;
    const right = ['Ada Lovelace', '4321', dateLabel('1990-12-10')];
    const answers = challenge.attributes.questions.map(
      (q: { id: string; prompt: string; options: { id: string; label: string }[] }) => {
        const pick = q.options.find((o) => right.includes(o.label)) ?? q.options[0]!;
        return { questionId: q.id, optionId: pick.id };
      },
    );
    const result = (
      await call('submitIdentityVerificationChallenge', {
        as: bank,
        params: { userIdentifier: user.id, challengeId: challenge.id },
        body: { data: { type: 'IdentityVerificationSubmission', attributes: { answers } } },
      })
    ).body.data;
    assert.equal(result.attributes.passed, true, JSON.stringify(challenge.attributes.questions));
    await call('applyVerifiedProfileUpdate', {
      as: bank,
      params: { userIdentifier: user.id },
      body: {
        data: {
          type: 'ProfileUpdate',
          attributes: { verificationToken: result.attributes.verificationToken, email: uniqueEmail('verified') },
        },
      },
    });

    // Linked accounts (the demo backup method after the challenge, whose third question asks for the newest account)
    await call('createDemoBackupPaymentMethod', { as: bank, params: { walletId: wallet.id } });
    await call('getLinkedAccounts', { as: bank, params: { userId: user.id } });
    const spare = await linkAccount(bank, user.id);
    await call('deleteLinkedAccount', { as: bank, params: { userId: user.id, linkedAccountId: spare }, expect: 204 });

    // Widgets
    await call('getWalletWidgetData', { as: bank, params: { walletId: wallet.id } });
    await call('findWalletWidgetData', {
      as: bank,
      query: `?filter[userReference]=${encodeURIComponent(`stable-${user.id}`)}`,
    });
    await call('getWalletWidgetDataV2', { as: bank, params: { walletId: wallet.id } });
    await call('findWalletWidgetDataV2', {
      as: bank,
      query: `?filter[userReference]=${encodeURIComponent(`stable-${user.id}`)}`,
    });
    await call('createWidgetSession', {
      as: bank,
      body: { data: { type: 'CreateWidgetSession', attributes: { widgetType: 'PaymentMethods' } } },
    });
    const widgetIntent = await intent(bank, wallet.id, 300);
    await call('getLinkedAccountWidgetData', { as: bank, params: { paymentIntentId: widgetIntent } });

    // Rewards, gifts, sweepstakes
    const reward = (
      await call('issueReward', {
        as: bank,
        body: {
          data: {
            type: 'IssueReward',
            attributes: {
              phoneNumber: user.attributes.profile.phoneNumber,
              amount: 250,
              idempotencyKey: randomUUID(),
              message: 'Thanks',
              reasonCode: 'CX-1',
              costCenter: 'CX',
            },
          },
        },
      })
    ).body.data;
    await call('listIssuedRewards', { as: bank });
    await call('getIssuedRewardById', { as: bank, params: { id: reward.id } });
    const stranger = phone();
    const preIssued = (
      await call('issueReward', {
        as: bank,
        body: {
          data: {
            type: 'IssueReward',
            attributes: { phoneNumber: stranger, amount: 300, idempotencyKey: randomUUID() },
          },
        },
      })
    ).body.data;
    await call('updateReward', {
      as: bank,
      params: { id: preIssued.id },
      body: { data: { type: 'UpdateReward', attributes: { amount: 350, message: 'Updated' } } },
    });
    await call('cancelReward', { as: bank, params: { id: preIssued.id }, expect: 204 });
    const gift = await t.request('POST', '/api/v1/simulation/gifts', {
      as: bank,
      body: { data: { type: 'Gift', attributes: { amount: 2500 } } },
    });
    assert.equal(gift.status, 201, gift.raw);
    await call('getGiftByLookUpId', { as: bank, params: { lookUpId: gift.body.data.id } });
    await call('addSweepstakesResults', {
      as: bank,
      params: { sweepstakesId: 'spring-2026' },
      body: {
        data: {
          type: 'SweepstakesResults',
          attributes: { customer: { idType: 'PhoneNumber', id: user.attributes.profile.phoneNumber } },
        },
      },
      expect: 201,
    });
  });

  test('payment intents and payments on the bank rails', async () => {
    const { wallet, accountId } = await funded(bank, 20_000);
    const intentId = await intent(bank, wallet.id, 1500);
    await call('listPaymentIntents', { as: bank });
    await call('getPaymentIntent', { as: bank, params: { paymentIntentId: intentId } });
    const paymentId = await authorize(bank, intentId, 1500);
    await call('getPayment', { as: bank, params: { paymentId } });
    await call('listPayments', { as: bank, query: '?include=paymentIntent' });
    await call('updatePayment', {
      as: bank,
      params: { paymentId },
      body: { data: { id: paymentId, type: 'Payment', attributes: { reference: 'order-42' } } },
    });
    await call('capturePayment', {
      as: bank,
      params: { paymentId },
      body: { data: { type: 'CapturePayment', attributes: { amount: 1500 } } },
    });
    await call('refund', {
      as: bank,
      params: { paymentId },
      body: { data: { type: 'RefundPayment', attributes: { amount: 500, idempotencyKey: randomUUID() } } },
    });
    const direct = await call('createPayment', {
      as: bank,
      body: {
        data: {
          type: 'CreatePayment',
          attributes: { walletId: wallet.id, amount: 700, linkedAccountId: accountId, reference: 'direct-1' },
        },
      },
    });
    assert.ok(direct.body.data.id);
    const toCancel = await authorize(bank, await intent(bank, wallet.id, 400), 400);
    await call('cancelPayment', { as: bank, params: { paymentId: toCancel } });
  });

  test('payments on the card rails, the virtual debit card and the card-network simulations', async () => {
    const { wallet } = await funded(card, 20_000);
    const paymentId = await authorize(card, await intent(card, wallet.id, 3000), 3000);
    await call('getVirtualDebitCard', { as: card, params: { paymentId } });
    await call('increaseAuthorization', {
      as: card,
      params: { paymentId },
      body: { data: { type: 'IncreaseAuthorization', attributes: { increase: 500, idempotencyKey: randomUUID() } } },
    });
    const auth = await call('simulateCardAuthorization', {
      as: card,
      params: { paymentId },
      body: { data: { type: 'SimulateCardAuthorization', attributes: { amount: 1000 } } },
    });
    await call('getAuthorizationRequestList', { as: card, params: { paymentId } });
    const authorizationRequestId =
      auth.body?.included?.[0]?.id ??
      (await send('getAuthorizationRequestList', card, { paymentId }, '', undefined)).body.data[0].id;
    await call('simulateCardCapture', {
      as: card,
      params: { paymentId },
      body: { data: { type: 'SimulateCardCapture', attributes: { authorizationRequestId, amount: 1000 } } },
    });
    await call('getCapturesList', { as: card, params: { paymentId } });
    await call('completePayment', { as: card, params: { paymentId } });
    const second = await authorize(card, await intent(card, wallet.id, 800), 800);
    await call('simulateCardAuthorizationCapture', {
      as: card,
      params: { paymentId: second },
      body: { data: { type: 'SimulateCardAuthorizationCapture', attributes: { amount: 800 } } },
    });
  });

  test('counterparties, their payouts and transfers, external transactions, webhooks and their events', async () => {
    const created = async (label: string) =>
      (
        await call('createCounterparty', {
          as: bank,
          body: {
            data: {
              type: 'CreateCounterparty',
              attributes: {
                label,
                accountNumber: `000${Math.floor(Math.random() * 1e9)}`,
                routingNumber: '021000021',
                accountType: 'Checking',
              },
            },
          },
          expect: 201,
        })
      ).body.data.id as string;
    const from = await created('Payroll');
    const to = await created('Vendor');
    await call('listCounterparties', { as: bank });
    await call('getCounterparty', { as: bank, params: { counterpartyId: from } });
    await call('updateCounterparty', {
      as: bank,
      params: { counterpartyId: from },
      body: { data: { id: from, type: 'UpdateCounterparty', attributes: { label: 'Payroll (main)' } } },
    });
    await call('simulateCounterpartyDeposit', {
      as: bank,
      params: { counterpartyId: from },
      body: { data: { type: 'SimulateCounterpartyDeposit', attributes: { amount: 10_000 } } },
      expect: 204,
    });
    await call('createCounterpartyPayout', {
      as: bank,
      params: { counterpartyId: from },
      body: { data: { type: 'CreateCounterpartyPayout', attributes: { amount: 1000, idempotencyKey: randomUUID() } } },
      expect: 201,
    });
    await call('listCounterpartyPayouts', { as: bank, params: { counterpartyId: from } });
    const transfer = await call('createCounterpartyTransfer', {
      as: bank,
      body: {
        data: {
          type: 'CounterpartyTransfer',
          attributes: {
            fromCounterpartyId: from,
            toCounterpartyId: to,
            amount: 1500,
            idempotencyKey: `transfer-${randomUUID()}`,
            metadata: { orderId: 'order_123' },
          },
        },
      },
      expect: 201,
    });
    await call('listCounterpartyTransfers', { as: bank });
    await call('getCounterpartyTransfer', { as: bank, params: { counterpartyTransferId: transfer.body.data.id } });
    const empty = await created('Spare');
    await call('deleteCounterparty', { as: bank, params: { counterpartyId: empty }, expect: 204 });

    const added = await call('addExternalTransactions', {
      as: bank,
      body: {
        data: [
          {
            type: 'ExternalTransaction',
            attributes: {
              type: 'Purchase',
              source: { id: randomUUID(), createdAt: '2026-05-30T10:00:00.000Z', customerId: '607329' },
              channel: 'nyc-store-1',
              payments: [
                { method: 'Cash', amount: 10_000 },
                { method: 'DebitCard', amount: 5000 },
              ],
            },
          },
        ],
      },
    });
    await call('listExternalTransactions', { as: bank });
    await call('getExternalTransaction', { as: bank, params: { externalTransactionId: added.body.data[0].id } });

    const hook = await call('createWebhook', {
      as: bank,
      body: {
        data: {
          type: 'Webhook',
          attributes: {
            enabled: true,
            name: 'Orders',
            url: 'https://hooks.example.com/coffer',
            topics: ['KycPending'],
          },
        },
      },
      expect: 201,
    });
    const webhookId = hook.body.data.id as string;
    await call('getWebhooks', { as: bank });
    await call('getWebhook', { as: bank, params: { webhookId } });
    await call('updateWebhook', {
      as: bank,
      params: { webhookId },
      body: { data: { id: webhookId, type: 'Webhook', attributes: { enabled: false, name: 'Orders (paused)' } } },
    });
    const email = uniqueEmail('events');
    const u = (await createUserOp(bank, { email })).body.data;
    await kycApproved(bank, u.id, email);
    const events = await call('listWebhookEvents', { as: bank });
    await call('getWebhookEvent', { as: bank, params: { webhookEventId: events.body.data[0].id } });
    await call('deleteWebhook', { as: bank, params: { webhookId }, expect: 204 });
  });

  test("error paths: Accrue's declared status and code (or the listed difference) for each refusal", async () => {
    /** Calls an operation expecting a refusal (or a not-found answer) and checks its status and code. */
    const refused = async (
      operationId: string,
      c: { as: Merchant; params?: Params; query?: string; body?: unknown },
      status: number,
      code: string | null,
    ) => {
      const res = await send(operationId, c.as, c.params, c.query, c.body);
      judge(operationId, res);
      refusedSeen.add(`${operationId} ${res.status}`);
      const got = code === null ? res.body?.data : res.body?.errors?.[0]?.code;
      assert.equal(res.status, status, `${operationId}: ${res.raw.slice(0, 300)}`);
      assert.equal(got, code, `${operationId}: ${res.raw.slice(0, 300)}`);
      return res;
    };
    const refusedSeen = new Set<string>();
    const unknown = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    const { user, wallet, accountId } = await funded(bank, 5000);

    // Creating what exists: the error names it.
    const dupWallet = await refused(
      'createWallet',
      { as: bank, body: { data: { type: 'Wallet', attributes: { userId: user.id } } } },
      400,
      'WalletAlreadyExists',
    );
    assert.equal(dupWallet.body.errors[0].meta.existingId, wallet.id);
    const dupUser = await refused(
      'createUser',
      {
        as: bank,
        body: { data: { type: 'User', attributes: { email: user.attributes.profile.email, phoneNumber: phone() } } },
      },
      409,
      'UserAlreadyExists',
    );
    assert.equal(dupUser.body.errors[0].meta.existingId, user.id);

    // Not-found answers Accrue declares.
    await refused('getIssuedRewardById', { as: bank, params: { id: unknown } }, 200, null);
    await refused('getWalletWidgetDataV2', { as: bank, params: { walletId: unknown } }, 200, null);
    await refused('getWalletWidgetData', { as: bank, params: { walletId: unknown } }, 400, 'NoWalletFound');
    await refused('getAuthorizationRequestList', { as: bank, params: { paymentId: unknown } }, 404, 'NotFound');
    await refused('getCapturesList', { as: bank, params: { paymentId: unknown } }, 404, 'NotFound');
    await refused(
      'simulateCounterpartyDeposit',
      {
        as: bank,
        params: { counterpartyId: unknown },
        body: { data: { type: 'SimulateCounterpartyDeposit', attributes: { amount: 100 } } },
      },
      404,
      'NotFound',
    );
    await refused(
      'createPaymentIntent',
      { as: other, body: { data: { type: 'CreatePaymentIntent', attributes: { amount: 100, walletId: wallet.id } } } },
      404,
      'WalletIdentifierNotFound',
    );

    // Payment actions refused in their state: 402, the reason as the code.
    const intentId = await intent(bank, wallet.id, 300);
    const paymentId = await authorize(bank, intentId, 300);
    const again = await send('authorizePayment', bank, { paymentIntentId: intentId }, '', {
      data: { type: 'AuthorizePaymentIntent', attributes: { amount: 300 } },
    });
    judge('authorizePayment', again);
    assert.equal(again.status, 201, 'a repeat answers as the first did');
    assert.equal(again.body.included[0].id, paymentId);
    await call('cancelPayment', { as: bank, params: { paymentId } });
    await refused(
      'capturePayment',
      { as: bank, params: { paymentId }, body: { data: { type: 'CapturePayment', attributes: { amount: 300 } } } },
      402,
      'IllegalOperation',
    );
    await refused(
      'authorizePayment',
      {
        as: bank,
        params: { paymentIntentId: intentId },
        body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 300 } } },
      },
      402,
      'IllegalOperation',
    );
    await refused(
      'increaseAuthorization',
      {
        as: bank,
        params: { paymentId },
        body: { data: { type: 'IncreaseAuthorization', attributes: { increase: 100 } } },
      },
      402,
      'IllegalOperation',
    );
    await refused('completePayment', { as: bank, params: { paymentId } }, 402, 'IllegalOperation');

    // Accrue's codes where the status matched already.
    const captured = await authorize(bank, await intent(bank, wallet.id, 400), 400);
    await call('capturePayment', {
      as: bank,
      params: { paymentId: captured },
      body: { data: { type: 'CapturePayment', attributes: { amount: 400 } } },
    });
    await refused(
      'refund',
      {
        as: bank,
        params: { paymentId: captured },
        body: { data: { type: 'RefundPayment', attributes: { amount: 401, idempotencyKey: randomUUID() } } },
      },
      400,
      'InvalidRefund',
    );
    await refused(
      'createWebhook',
      {
        as: bank,
        body: {
          data: { type: 'Webhook', attributes: { enabled: true, name: 'x', topics: ['*', 'KycPending'] } },
        },
      },
      400,
      'InvalidTopics',
    );

    // The spec's codes, kept (listed differences).
    const pendingEmail = uniqueEmail('nokyc');
    const noKyc = (await createUserOp(bank, { email: pendingEmail })).body.data;
    const noKycAccount = await linkAccount(bank, noKyc.id);
    const noKycWallet = (
      await call('createWallet', {
        as: bank,
        body: { data: { type: 'Wallet', attributes: { userId: noKyc.id } } },
        expect: 201,
      })
    ).body.data;
    await refused(
      'createOneTimeDeposit',
      {
        as: bank,
        params: { walletId: noKycWallet.id },
        body: {
          data: {
            type: 'OneTimeDeposit',
            attributes: { amount: 500, idempotencyKey: randomUUID(), linkedAccountId: noKycAccount },
          },
        },
      },
      400,
      'InvalidKycStatus',
    );
    await refused(
      'submitIdentityVerificationChallenge',
      {
        as: bank,
        params: { userIdentifier: user.id, challengeId: unknown },
        body: {
          data: {
            type: 'IdentityVerificationSubmission',
            attributes: { answers: [{ questionId: 'q_1', optionId: 'opt_1' }] },
          },
        },
      },
      400,
      'ChallengeNotFound',
    );
    await refused(
      'applyVerifiedProfileUpdate',
      {
        as: bank,
        params: { userIdentifier: user.id },
        body: {
          data: {
            type: 'ProfileUpdate',
            attributes: { verificationToken: `pvt_${'0'.repeat(64)}`, email: uniqueEmail() },
          },
        },
      },
      400,
      'ChallengeNotFound',
    );
    assert.ok(accountId);
    // Each listed code difference was met by a refusal above.
    const unmet = DIFFERENCES.filter((d) => d.match.kind === 'code').flatMap((d) =>
      (d.operations === 'all' ? [] : d.operations)
        .filter((op) => !refusedSeen.has(`${op} ${d.match.status}`))
        .map((op) => `${d.id}: ${op}`),
    );
    assert.deepEqual(unmet, []);
  });

  test("every operation served at Accrue's method and path carries Accrue's operationId in the OpenAPI document", async () => {
    const doc = (await t.request('GET', '/api/v1/openapi.json')).body as {
      paths: Record<string, Record<string, { operationId?: string }>>;
    };
    const served = new Map<string, string>();
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops))
        if (op.operationId)
          served.set(`${method.toUpperCase()} ${path.replace(/\{[^}]+\}/g, '{}').replace(/\/$/, '')}`, op.operationId);
    }
    const differing = OPERATIONS.flatMap((o) => {
      const ours = served.get(`${o.method} ${o.path.replace(/\{[^}]+\}/g, '{}')}`);
      return ours === undefined || ours === o.operationId
        ? []
        : [`${o.method} ${o.path}: ${ours}, Accrue's ${o.operationId}`];
    });
    assert.deepEqual(differing, [], 'a client generated from either document names the operations alike');
  });

  test('every one of the 82 operations was called', () => {
    assert.equal(OPERATIONS.length, 82);
    assert.equal(new Set(OPERATIONS.map((o) => o.operationId)).size, 82);
    assert.deepEqual(
      OPERATIONS.map((o) => o.operationId).filter((id) => !covered.has(id)),
      [],
    );
  });

  test("another merchant's id on every by-id operation is 404", () => {
    assert.deepEqual(crossMerchant, []);
  });

  test('no violation of the contract but the listed differences', () => {
    assert.deepEqual(
      untolerated.map((v) => `${v.operationId} ${v.status} ${v.kind}: ${v.message}`),
      [],
    );
  });

  test('every listed difference still tolerates something for each operation it names', () => {
    // A code difference is seen by the error-path checks, which call no operation twice.
    const stale = DIFFERENCES.filter((d) => d.match.kind !== 'code' && d.checked !== false).flatMap((d: Difference) => {
      const seen = used.get(d.id) ?? new Set();
      if (d.operations === 'all') return seen.size === 0 ? [`${d.id}: never used`] : [];
      return d.operations.filter((op) => !seen.has(op)).map((op) => `${d.id}: nothing to tolerate for ${op}`);
    });
    assert.deepEqual(stale, []);
  });

  test("docs/accrue-compatibility.md and the README's summary are what npm run docs:accrue writes", () => {
    assert.equal(
      readFileSync(new URL('../../docs/accrue-compatibility.md', import.meta.url), 'utf8'),
      renderCompatibilityDoc(),
    );
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    assert.equal(readme, withCompatibilitySummary(readme));
  });
});
