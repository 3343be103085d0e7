// First-start conveniences of the sandbox (docs/adr/0010-one-process-five-listeners.md): generated secrets kept in DATA_DIR,
// and a demo merchant so a newcomer can call the API at once. Live never gets here without
// its secrets (config.ts refuses to start) and never creates a demo merchant.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import type { Config } from './config.ts';
import { generateToken } from './crypto/tokens.ts';
import type { AppContext } from './context.ts';
import { createClient } from './modules/clients/domain.ts';
import { countClients, findClient } from './modules/clients/sql.ts';

/**
 * Creates DATA_DIR for this user only (0700) and takes group and other access away from
 * whatever an earlier start left there (files 0600, folders 0700). New files get the same modes
 * from the process's umask (main.ts).
 */
export async function secureDataDir(dir: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const tighten = async (p: string, isDir: boolean) => {
    const { mode } = await fs.lstat(p);
    if ((mode & 0o077) !== 0) await fs.chmod(p, isDir ? 0o700 : 0o600);
  };
  await tighten(dir, true);
  for (const e of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isDirectory() || e.isFile()) await tighten(path.join(e.parentPath, e.name), e.isDirectory());
  }
}

interface StoredSecrets {
  adminToken: string;
  cardEncryptionKey: string;
  widgetSigningKey: string;
}

/**
 * Reads (or on first start creates) DATA_DIR/secrets.json, mode 0600, and fills what is unset.
 * Its admin token is not checked for the generated format (crypto/tokens.ts): the sandbox
 * generated it, and one from before the format (`adm_…`) keeps working.
 */
export async function resolveSandboxSecrets(config: Config): Promise<Config> {
  if (config.environment !== 'sandbox') return config;
  if (config.adminToken && config.cardEncryptionKey && config.widgetSigningKey) return config;
  await fs.mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(config.dataDir, 'secrets.json');
  const fresh: StoredSecrets = {
    adminToken: generateToken(),
    cardEncryptionKey: randomBytes(32).toString('base64'),
    widgetSigningKey: randomBytes(32).toString('base64'),
  };
  try {
    await fs.writeFile(file, JSON.stringify(fresh, null, 2), { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const stored = JSON.parse(await fs.readFile(file, 'utf8')) as StoredSecrets;
  return {
    ...config,
    adminToken: config.adminToken ?? stored.adminToken,
    cardEncryptionKey: config.cardEncryptionKey ?? Buffer.from(stored.cardEncryptionKey, 'base64'),
    widgetSigningKey: config.widgetSigningKey ?? Buffer.from(stored.widgetSigningKey, 'base64'),
  };
}

export interface DemoMerchant {
  clientId: string;
  /** Known only when this start created it or DATA_DIR still holds it. */
  secret: string | undefined;
  created: boolean;
}

/**
 * Creates "Demo Merchant" when the sandbox has no clients. Its secret is kept in
 * DATA_DIR/demo-client.json (sandbox only) so later starts can print it again.
 */
export async function ensureDemoMerchant(ctx: AppContext): Promise<DemoMerchant | undefined> {
  if (ctx.config.environment !== 'sandbox') return undefined;
  const file = path.join(ctx.config.dataDir, 'demo-client.json');
  const created = await ctx.db.transaction(async (tx) => {
    // Several processes may start together on one PostgreSQL: only one creates the demo.
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext('coffer:demo-merchant'))`);
    if ((await countClients(tx)) > 0) return undefined;
    return createClient(tx, { name: 'Demo Merchant', environment: 'sandbox', now: ctx.clock.now() });
  });
  if (created) {
    const demo = { clientId: created.client.id, secret: created.secret.secret };
    await fs.mkdir(ctx.config.dataDir, { recursive: true, mode: 0o700 });
    await fs.writeFile(file, JSON.stringify(demo, null, 2), { mode: 0o600 });
    return { ...demo, created: true };
  }
  try {
    const demo = JSON.parse(await fs.readFile(file, 'utf8')) as { clientId: string; secret: string };
    if (await findClient(ctx.db, demo.clientId)) return { ...demo, created: false };
  } catch {
    /* no demo file: this database was set up another way */
  }
  return undefined;
}
