// @coffer/client as a user installs it: built, then `npm install --install-links <this folder>`
// into an empty project outside the repository, whose script takes a customer through KYC, a
// simulated bank account and deposit, and a payment against a running server, with the SDK's
// helpers only.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freshDatabaseUrl } from '../../../src/test/harness.ts';
import { startServer, type ServerProcess } from '../../../src/test/process.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PACKAGE = fileURLToPath(new URL('../', import.meta.url));

const PAY = `
import { createCoffer } from '@coffer/client';

const coffer = createCoffer({ baseUrl: process.env.COFFER_URL, clientId: process.env.COFFER_CLIENT_ID, secret: process.env.COFFER_SECRET });
const email = \`ada.\${Date.now()}@example.com\`;
const user = await coffer.users.create({ email, firstName: 'Ada', lastName: 'Lovelace' });
await coffer.kyc.acceptDisclosures(user.id);
await coffer.kyc.apply(user.id, {
  firstName: 'Ada', lastName: 'Lovelace', dateOfBirth: '1990-12-10', email,
  address: { street: '1 Main St', city: 'Springfield', state: 'IL', postalCode: '62701', country: 'US' },
});
for (let i = 0; (await coffer.kyc.status(user.id)).attributes.status !== 'Approved'; i++) {
  if (i > 100) throw new Error('KYC was not approved');
  await new Promise((r) => setTimeout(r, 200));
}
const account = await coffer.simulations.linkAccount(user.id);
const wallet = await coffer.wallets.create(user.id);
await coffer.deposit(wallet.id, { amount: 5000, linkedAccountId: account.id });
await coffer.simulations.clearPending(wallet.id, 'bank');
const intent = await coffer.paymentIntents.create({ amount: 1500, walletId: wallet.id, reference: 'order-1' });
const authorized = await coffer.paymentIntents.authorize(intent.id, { amount: 1500 });
const payment = authorized.included.find((r) => r.type === 'Payment');
const captured = await coffer.payments.capture(payment.id, 1500);
const balance = await coffer.wallets.balance(wallet.id);
console.log(JSON.stringify({ linked: (await coffer.linkedAccounts.list(user.id)).length, status: captured.attributes.status, available: balance.attributes.balance.available.total }));
`;

let server: ServerProcess;
let data: string;
const dirs: string[] = [];
const tmp = (prefix: string) => {
  const d = mkdtempSync(path.join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};

before(async () => {
  data = tmp('coffer-sdk-install-data-');
  server = await startServer({
    DATA_DIR: data,
    DATABASE_URL: await freshDatabaseUrl(),
    COFFER_ENV: 'sandbox',
    ADMIN_TOKEN: 'cft_ucdSMdwqbKZa2i5dcOVkjNwOEJUFbxKxwbvWCClCGutSwtKF',
    CARD_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64'),
    WIDGET_SIGNING_KEY: Buffer.alloc(32, 4).toString('base64'),
    LOG_LEVEL: 'warn',
  });
  await server.waitFor(/Stop with Ctrl-C/);
});
after(async () => {
  server?.kill('SIGTERM');
  await server?.exited;
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('installs into an empty project outside the repository and takes a payment there', async () => {
  // The build the README asks for, then the one install command.
  execFileSync('npm', ['run', 'build', '-w', '@coffer/client'], { cwd: ROOT, stdio: 'pipe' });
  const project = tmp('coffer-sdk-install-');
  assert.ok(path.relative(ROOT, project).startsWith('..'), 'outside the repository');
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'shop', private: true, type: 'module' }));
  execFileSync('npm', ['install', '--install-links', '--prefer-offline', '--no-audit', '--no-fund', PACKAGE], {
    cwd: project,
    stdio: 'pipe',
  });
  // A copy with its own dependencies, not a link back into the repository.
  const installed = path.join(project, 'node_modules/@coffer/client');
  assert.equal(JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8')).name, '@coffer/client');
  assert.ok(readFileSync(path.join(project, 'node_modules/openapi-fetch/package.json'), 'utf8'));

  writeFileSync(path.join(project, 'pay.mjs'), PAY);
  const demo = JSON.parse(readFileSync(path.join(data, 'demo-client.json'), 'utf8'));
  const out = execFileSync(process.execPath, ['pay.mjs'], {
    cwd: project,
    env: {
      PATH: process.env.PATH,
      COFFER_URL: `http://127.0.0.1:${server.ports.api}`,
      COFFER_CLIENT_ID: demo.clientId,
      COFFER_SECRET: demo.secret,
    },
    encoding: 'utf8',
  });
  assert.deepEqual(JSON.parse(out.trim()), { linked: 1, status: 'Processing', available: 3500 });
});
