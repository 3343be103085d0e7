// Your first sandbox payment with @coffer/client: a customer with approved KYC and a funded
// wallet pays $25.00 at checkout. Run it against `npm start`:
//
//   COFFER_CLIENT_ID=<Client-ID> COFFER_SECRET=<Secret> node --import tsx examples/quickstart.ts
//
// Every step is one SDK call; retries, idempotency keys and timeouts are the SDK's.
import { createCoffer } from '@coffer/client';

const coffer = createCoffer({
  baseUrl: process.env.COFFER_URL ?? 'http://localhost:3000',
  clientId: process.env.COFFER_CLIENT_ID ?? '',
  secret: process.env.COFFER_SECRET ?? '',
});
const log = (step: string, detail: unknown) =>
  process.stdout.write(`${step.padEnd(28)} ${typeof detail === 'string' ? detail : JSON.stringify(detail)}\n`);

// 1. A customer, who accepts the KYC disclosures and applies (the sandbox approves in a second).
const phoneNumber = `+1415${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;
const user = await coffer.users.create({ phoneNumber, firstName: 'Ada', lastName: 'Lovelace' });
log('user', user.id);
await coffer.kyc.acceptDisclosures(user.id);
await coffer.kyc.apply(user.id, {
  firstName: 'Ada',
  lastName: 'Lovelace',
  dateOfBirth: '1990-12-10',
  email: 'ada@example.com',
  address: { street: '1 Main St', city: 'Springfield', state: 'IL', postalCode: '62701', country: 'US' },
});
let kyc = 'Pending';
for (let i = 0; i < 50 && kyc !== 'Approved'; i++) {
  await new Promise((r) => setTimeout(r, 100));
  kyc = (await coffer.kyc.status(user.id)).attributes.status;
}
log('kyc', kyc);

// 2. A linked bank account (sandbox simulation), a wallet, and a $50.00 deposit that clears.
const account = await coffer.simulations.linkAccount(user.id);
const wallet = await coffer.wallets.create(user.id);
const deposit = await coffer.deposit(wallet.id, { amount: 5_000, linkedAccountId: account.id });
await coffer.simulations.clearPending(wallet.id, 'bank');
log('wallet', `${wallet.id}, deposit ${deposit.id}`);
log('balance', (await coffer.wallets.balance(wallet.id)).attributes.balance.available);

// 3. Checkout: an intent for $25.00, authorized from the wallet, captured.
const intent = await coffer.paymentIntents.create({
  amount: 2_500,
  walletId: wallet.id,
  reference: `order-${Date.now()}`,
});
const authorized = await coffer.paymentIntents.authorize(intent.id, { amount: 2_500, applyWalletBalance: true });
const payment = authorized.included!.find((r) => r.type === 'Payment')!;
log('authorized', `${authorized.data.attributes.status}, payment ${payment.id}`);
const captured = await coffer.payments.capture(payment.id, 2_500);
log('captured', `${captured.attributes.status}, ${captured.attributes.amount} cents`);
log('balance after', (await coffer.wallets.balance(wallet.id)).attributes.balance.available);
