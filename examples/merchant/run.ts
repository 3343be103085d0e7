// `npm run example`: a throwaway Coffer sandbox (embedded PostgreSQL in a temporary folder), a
// demo customer with a funded wallet, and the example shop on http://localhost:4000. The shop
// and the widget host are different origins, as they are in production. Ctrl-C stops both.
//
// SHOP_PORT moves the shop (default 4000); PORT, CARD_PORT, PAY_PORT, ADMIN_PORT and
// CONSOLE_PORT move the sandbox as they move `npm start` (defaults 3000–3004). Whatever way
// this ends (Ctrl-C, a signal, an error), the sandbox is stopped and its folder removed.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { seedDemoCustomer } from './seed.ts';
import { startMerchant } from './server.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const envPort = (name: string, fallback: number) => Number(process.env[name]?.trim() || fallback);
const ports = {
  PORT: envPort('PORT', 3000),
  CARD_PORT: envPort('CARD_PORT', 3001),
  PAY_PORT: envPort('PAY_PORT', 3002),
  ADMIN_PORT: envPort('ADMIN_PORT', 3003),
  CONSOLE_PORT: envPort('CONSOLE_PORT', 3004),
};
const shopPort = envPort('SHOP_PORT', 4000);
const host = process.env.HOST?.trim() || '127.0.0.1';
const adminHost = process.env.ADMIN_HOST?.trim() || '127.0.0.1';

/** A refusal the user can act on: printed as one line, no stack. */
class Refusal extends Error {}

let server: ChildProcess | undefined;
let dataDir: string | undefined;
let shop: { close: () => Promise<void> } | undefined;
let stopping: Promise<never> | undefined;

/** Stops the shop and the sandbox, removes the sandbox's folder, exits. Safe to call more than once. */
function stop(code: number): Promise<never> {
  stopping ??= (async () => {
    await shop?.close().catch(() => {});
    const child = server;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    process.exit(code);
  })();
  return stopping;
}

function fail(err: unknown): Promise<never> {
  process.stderr.write(
    `\nnpm run example: ${err instanceof Refusal ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  return stop(1);
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop(0));
process.on('uncaughtException', (err) => void fail(err));
process.on('unhandledRejection', (err) => void fail(err));
// Last resort (process.exit from elsewhere): the sandbox must not outlive this process.
process.on('exit', () => {
  if (server && server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

function bindable(port: number, on: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, on, () => s.close(() => resolve(true)));
  });
}

/** Whether a Coffer server answers on the port (its /health). */
async function cofferOn(port: number, on: string): Promise<boolean> {
  try {
    const res = await fetch(`http://${on.includes(':') ? `[${on}]` : on}:${port}/health`, {
      signal: AbortSignal.timeout(2_000),
    });
    return res.ok && ((await res.json()) as { status?: string }).status === 'ok';
  } catch {
    return false;
  }
}

const shopBusy = (port: number) =>
  new Refusal(
    `port ${port} (the example shop) is in use. Stop what listens there, or pick another port: SHOP_PORT=4100 npm run example`,
  );

async function checkPorts(): Promise<void> {
  if (!(await bindable(shopPort, 'localhost'))) throw shopBusy(shopPort);
  for (const [name, port] of Object.entries(ports)) {
    const on = name === 'ADMIN_PORT' ? adminHost : host;
    if (await bindable(port, on)) continue;
    if (await cofferOn(port, on))
      throw new Refusal(
        `a Coffer server is already running on port ${port} (${name}), most likely \`npm start\`. ` +
          'The example starts a sandbox of its own: stop that one first (Ctrl-C in its terminal), ' +
          "or move the example's with PORT, CARD_PORT, PAY_PORT, ADMIN_PORT and CONSOLE_PORT, e.g. " +
          'PORT=3100 CARD_PORT=3101 PAY_PORT=3102 ADMIN_PORT=3103 CONSOLE_PORT=3104 npm run example',
      );
    throw new Refusal(
      `port ${port} (${name}, for the example's sandbox) is in use by another program. Stop it, or move the ` +
        'sandbox: PORT, CARD_PORT, PAY_PORT, ADMIN_PORT and CONSOLE_PORT (defaults 3000–3004)',
    );
  }
}

async function main(): Promise<void> {
  await checkPorts();
  dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-example-'));
  // WEBHOOK_ALLOW_PRIVATE: this sandbox is for local development, so a webhook receiver you run
  // on localhost can be registered with it.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
    COFFER_ENV: 'sandbox',
    LOG_LEVEL: 'warn',
    WEBHOOK_ALLOW_PRIVATE: 'true',
  };
  delete env.DATABASE_URL; // always the embedded one, never a database named in the environment
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  server = child;
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const onExit = (code: number | null) =>
      reject(new Refusal(`the example's sandbox exited (${code}) before it was ready:\n${out}`));
    child.once('exit', onExit);
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk;
      if (out.includes('Stop with Ctrl-C')) {
        child.off('exit', onExit);
        resolve();
      }
    });
  });
  // Once ready, the sandbox ending on its own ends the example too.
  child.once('exit', (code) => {
    if (!stopping) void fail(new Refusal(`the example's sandbox stopped (exit code ${code})`));
  });
  child.stdout!.resume();

  // The sandbox keeps the demo merchant it created in DATA_DIR/demo-client.json.
  const demo = JSON.parse(readFileSync(path.join(dataDir, 'demo-client.json'), 'utf8')) as {
    clientId: string;
    secret: string;
  };
  const acct = { api: `http://localhost:${ports.PORT}/api/v1`, clientId: demo.clientId, secret: demo.secret };
  const customer = await seedDemoCustomer(acct);
  const payUrl = `http://localhost:${ports.PAY_PORT}`;
  const started = await startMerchant({ ...acct, payUrl, customer, port: shopPort }).catch((err: unknown) => {
    throw (err as NodeJS.ErrnoException).code === 'EADDRINUSE' ? shopBusy(shopPort) : err;
  });
  shop = started;
  process.stdout.write(`
The example shop is open: ${started.url}

  Coffer API     ${acct.api}   (Client-ID ${acct.clientId})
  Widget host    ${payUrl}
  Customer       ${customer.referenceId}, ${customer.phoneNumber}: wallet ${customer.walletId}
                 ($50.00 deposited, $5.00 reward)

Stop with Ctrl-C.
`);
}

main().catch(fail);
