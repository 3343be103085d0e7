// `npm run example`: a throwaway Coffer sandbox (embedded PostgreSQL in a temporary folder), a
// demo customer with a funded wallet, and the example shop on http://localhost:4000. The shop
// and the widget host are different origins, as they are in production. Ctrl-C stops both.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { seedDemoCustomer } from './seed.ts';
import { startMerchant } from './server.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dataDir = mkdtempSync(path.join(tmpdir(), 'coffer-example-'));
// WEBHOOK_ALLOW_PRIVATE: this sandbox is for local development, so a webhook receiver you run
// on localhost can be registered with it.
const env = {
  ...process.env,
  DATA_DIR: dataDir,
  PORT: '3000',
  CARD_PORT: '3001',
  PAY_PORT: '3002',
  ADMIN_PORT: '3003',
  LOG_LEVEL: 'warn',
  WEBHOOK_ALLOW_PRIVATE: 'true',
};
const server = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
  cwd: root,
  env,
  stdio: ['ignore', 'pipe', 'inherit'],
});

const banner = await new Promise<string>((resolve, reject) => {
  let out = '';
  server.stdout.on('data', (chunk: Buffer) => {
    out += chunk;
    if (out.includes('Stop with Ctrl-C')) resolve(out);
  });
  server.on('exit', (code) => reject(new Error(`coffer exited (${code}) before it was ready:\n${out}`)));
});
const field = (name: string) => new RegExp(`${name}\\s+(\\S+)`).exec(banner)?.[1] ?? '';
const acct = { api: 'http://localhost:3000/api/v1', clientId: field('Client-ID'), secret: field('Secret') };

const customer = await seedDemoCustomer(acct);
const shop = await startMerchant({
  ...acct,
  payUrl: 'http://localhost:3002',
  customer,
  port: Number(process.env.SHOP_PORT ?? 4000),
});
process.stdout.write(`
The example shop is open: ${shop.url}

  Coffer API     http://localhost:3000/api/v1   (Client-ID ${acct.clientId})
  Widget host    http://localhost:3002
  Customer       ${customer.referenceId}, ${customer.phoneNumber}: wallet ${customer.walletId}
                 ($50.00 deposited, $5.00 reward)

Stop with Ctrl-C.
`);

const stop = async () => {
  await shop.close();
  server.kill('SIGTERM');
  server.on('exit', () => {
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  });
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
