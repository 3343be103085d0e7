// A demo customer for the example shop: KYC approved, a linked bank account, a wallet with
// $50.00 deposited and a $5.00 reward, made through the public API like any merchant would.
import { randomInt } from 'node:crypto';
import { coffer, newKey, type CofferAccount } from './coffer.ts';

export interface DemoCustomer {
  userId: string;
  walletId: string;
  referenceId: string;
  email: string;
  phoneNumber: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `tick` runs while waiting for the KYC decision (tests use it to run the decision job). */
export async function seedDemoCustomer(
  acct: CofferAccount,
  opts: { tick?: () => Promise<void> } = {},
): Promise<DemoCustomer> {
  const phoneNumber = `+1415${String(randomInt(1e7)).padStart(7, '0')}`;
  const referenceId = `cust_${randomInt(1e9)}`;
  const email = `${referenceId}@example.com`;
  const user = await coffer(acct, 'POST', '/users', {
    data: { type: 'User', attributes: { phoneNumber, email, firstName: 'Ada', lastName: 'Lovelace' } },
  });
  const userId = user.data.id as string;
  await coffer(acct, 'PATCH', `/users/${userId}/attached-profile`, {
    data: { type: 'AttachedProfile', attributes: { referenceId } },
  });
  await coffer(acct, 'POST', `/users/${userId}/disclosures/kyc`);
  await coffer(acct, 'POST', `/users/${userId}/kyc/application`, {
    data: {
      type: 'KycApplication',
      attributes: {
        firstName: 'Ada',
        lastName: 'Lovelace',
        dateOfBirth: '1990-12-10',
        email,
        address: { street: '1 Main St', city: 'Springfield', state: 'IL', postalCode: '62701', country: 'US' },
      },
    },
  });
  for (let i = 0; ; i++) {
    await opts.tick?.();
    const kyc = await coffer(acct, 'GET', `/users/${userId}/kyc`);
    if (kyc.data.attributes.status === 'Approved') break;
    if (i > 100) throw new Error(`KYC stayed ${kyc.data.attributes.status}`);
    await sleep(100);
  }
  const account = await coffer(acct, 'POST', `/simulation/users/${userId}/linked-accounts`, {
    data: { type: 'LinkedAccount', attributes: { accountMask: '6789' } },
  });
  const wallet = await coffer(acct, 'POST', '/wallets', { data: { type: 'Wallet', attributes: { userId } } });
  const walletId = wallet.data.id as string;
  await coffer(acct, 'POST', `/wallets/${walletId}/transactions`, {
    data: {
      type: 'OneTimeDeposit',
      attributes: { amount: 5_000, linkedAccountId: account.data.id, idempotencyKey: newKey() },
    },
  });
  await coffer(acct, 'POST', `/simulation/wallets/${walletId}/clear-pending/bank`);
  await coffer(acct, 'POST', '/rewards', {
    data: {
      type: 'IssueReward',
      attributes: { walletId, amount: 500, idempotencyKey: newKey(), message: 'Welcome reward' },
    },
  });
  return { userId, walletId, referenceId, email, phoneNumber };
}
