// The server as a process: first start, logs, the PGlite folder lock, graceful shutdown,
// restart, the live environment's refusals (docs/adr/0010-one-process-five-listeners.md), and a database newer than the build.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { claimDatabaseEnvironment } from './db/deployment.ts';
import { isGeneratedToken } from './crypto/tokens.ts';
import { openDatabase } from './db/open.ts';
import { dbKind, freshDatabaseUrl, providerEnv } from './test/harness.ts';
import { startServer, type ServerProcess } from './test/process.ts';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../bin/coffer.mjs', import.meta.url));
const LIVE_TOKEN = 'cft_zbbOnwjhm7GWTlZkfIExBvFoLrsL5Tw7viyLed0lA8TQy_zo';
const PGLITE = {
  DATABASE_URL: undefined,
  COFFER_ENV: 'sandbox',
  ADMIN_TOKEN: undefined,
  CARD_ENCRYPTION_KEY: undefined,
  WIDGET_SIGNING_KEY: undefined,
};

describe('the sandbox on embedded PostgreSQL, as a process', () => {
  let dir: string;
  let server: ServerProcess;
  let clientId: string;
  let secret: string;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'coffer-'));
    server = await startServer({ ...PGLITE, DATA_DIR: dir, LOG_LEVEL: 'info' });
    await server.waitFor(/Stop with Ctrl-C/);
    clientId = (await server.waitFor(/Client-ID\s+([0-9a-f-]{36})/))[1]!;
    secret = (await server.waitFor(/Secret\s+(sk_sandbox_\S+)/))[1]!;
  });
  after(async () => {
    server.kill('SIGKILL');
    await server.exited;
    await rm(dir, { recursive: true, force: true });
  });

  test('the first start prints the listeners, the admin token and a demo merchant that works', async () => {
    const out = server.stdout();
    assert.match(out, /Demo merchant \(created now\)/);
    for (const port of Object.values(server.ports))
      assert.ok(out.includes(`http://localhost:${port}`), `listener ${port} printed`);
    const token = out.match(/ADMIN_TOKEN\s+(\S+)/)?.[1] ?? '';
    assert.ok(isGeneratedToken(token), `a generated token (cft_…): ${token}`);
    // The operator's console pages are off by default: the banner says how to turn them on.
    assert.match(out, /Console .*CONSOLE_OPERATOR_SIGN_IN=true/);
    const res = await fetch(`http://127.0.0.1:${server.ports.api}/api/v1/users`, {
      headers: { 'client-id': clientId, authorization: `Bearer ${secret}` },
    });
    assert.equal(res.status, 200);
    for (const port of Object.values(server.ports)) {
      const health = await fetch(`http://127.0.0.1:${port}/health`);
      assert.deepEqual(await health.json(), { status: 'ok' });
    }
  });

  test('each request is logged once with its request id; secrets never reach the log', async () => {
    const res = await fetch(`http://127.0.0.1:${server.ports.api}/api/v1/users`, {
      method: 'POST',
      headers: {
        'client-id': clientId,
        authorization: `Bearer ${secret}`,
        'content-type': 'application/vnd.api+json',
        'x-request-id': 'log-check-1',
      },
      body: JSON.stringify({ data: { type: 'User', attributes: { phoneNumber: '+14155550000' } } }),
    });
    assert.equal(res.status, 201);
    await new Promise((r) => setTimeout(r, 300));
    const lines = server
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'));
    const mine = lines.filter((l) => l.includes('log-check-1'));
    assert.equal(mine.length, 1, mine.join('\n'));
    const entry = JSON.parse(mine[0]!);
    assert.equal(entry.reqId, 'log-check-1');
    assert.equal(entry.status, 201);
    const logText = lines.join('\n');
    assert.ok(!logText.includes(secret), 'the client secret is not logged');
    assert.ok(!/authorization/i.test(logText), 'no authorization header is logged');
  });

  test('a second process on the same data folder refuses to start', async () => {
    const second = await startServer({ ...PGLITE, DATA_DIR: dir });
    const { code } = await second.exited;
    assert.notEqual(code, 0);
    assert.match(
      second.stderr(),
      /in use by another Coffer process .*: stop that one .*or give this one a DATA_DIR of its own/,
    );
    assert.doesNotMatch(second.stderr(), /\n\s+at /, 'one line, no stack');
  });

  test('a second process on the same port refuses to start, names the variable and says what to do', async () => {
    const other = await mkdtemp(path.join(tmpdir(), 'coffer-'));
    try {
      const second = await startServer({ ...PGLITE, DATA_DIR: other, PORT: String(server.ports.api) });
      assert.equal((await second.exited).code, 78);
      assert.match(
        second.stderr(),
        new RegExp(
          `^coffer: 127\\.0\\.0\\.1:${server.ports.api} \\(PORT, the api listener\\) is in use: is Coffer already running \\(npm start in another terminal\\)\\? Stop it, or give`,
        ),
      );
      assert.doesNotMatch(second.stderr(), /\n\s+at /, 'one line, no stack');
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });

  test('SIGTERM lets an in-flight request finish, then exits cleanly; a restart keeps the data', async () => {
    const body = JSON.stringify({ data: { type: 'User', attributes: { phoneNumber: '+14155550001' } } });
    const socket = connect(server.ports.api, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    let response = '';
    socket.on('data', (d) => (response += d.toString()));
    // Headers and half the body now; SIGTERM; the rest of the body afterwards.
    socket.write(
      `POST /api/v1/users HTTP/1.1\r\nHost: localhost\r\nClient-ID: ${clientId}\r\nAuthorization: Bearer ${secret}\r\n` +
        `Content-Type: application/vnd.api+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n` +
        body.slice(0, 20),
    );
    await new Promise((r) => setTimeout(r, 200));
    server.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    await assert.rejects(fetch(`http://127.0.0.1:${server.ports.api}/health`), 'no new connections after SIGTERM');
    socket.end(body.slice(20));
    const { code, signal } = await server.exited;
    assert.match(response, /^HTTP\/1\.1 201/);
    assert.equal(signal, null);
    assert.equal(code, 0);

    // Restart on the same folder: the lock is free again, the data and the demo merchant remain.
    server = await startServer({ ...PGLITE, DATA_DIR: dir });
    await server.waitFor(/Stop with Ctrl-C/);
    assert.doesNotMatch(server.stdout(), /created now/);
    assert.ok(server.stdout().includes(clientId));
    const list = await fetch(`http://127.0.0.1:${server.ports.api}/api/v1/users?filter[phoneNumber]=%2B14155550001`, {
      headers: { 'client-id': clientId, authorization: `Bearer ${secret}` },
    });
    assert.equal(((await list.json()) as { meta: { total: number } }).meta.total, 1);
  });
});

describe('a sandbox whose admin token comes from the environment, as a process', () => {
  let dir: string;
  let server: ServerProcess;
  const token = 'cft_3YbZD_GKVgqNE9PJmN1pQPUY2ttbpYICtdG4dBjKyb977OWv';
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'coffer-'));
    // A folder left open by an earlier start, with a file anyone could read.
    await chmod(dir, 0o755);
    await writeFile(path.join(dir, 'notes.txt'), 'x', { mode: 0o644 });
    await chmod(path.join(dir, 'notes.txt'), 0o644);
    server = await startServer({
      ...PGLITE,
      DATABASE_URL: await freshDatabaseUrl(),
      DATA_DIR: dir,
      ADMIN_TOKEN: token,
      HOST: '127.0.0.2',
      LOG_LEVEL: 'info',
    });
    await server.waitFor(/Stop with Ctrl-C/);
  });
  after(async () => {
    server.kill('SIGKILL');
    await server.exited;
    await rm(dir, { recursive: true, force: true });
  });

  test('the banner does not print the token it was given', () => {
    assert.ok(!server.stdout().includes(token));
    assert.doesNotMatch(server.stdout(), /ADMIN_TOKEN/);
    assert.match(server.stdout(), /Demo merchant/);
  });

  test('DATA_DIR is 0700 and every file in it 0600: secrets, the demo merchant, PGlite and its lock', async () => {
    assert.equal((await stat(dir)).mode & 0o777, 0o700);
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    const names = entries.map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
    for (const f of ['secrets.json', 'demo-client.json', 'notes.txt'])
      assert.ok(names.includes(f), `${f} in ${names.slice(0, 20).join(', ')}`);
    if (dbKind === 'pglite')
      assert.ok(
        names.includes('coffer.lock') && names.some((n) => n.startsWith('pglite/base/')),
        'PGlite files and the lock',
      );
    const open = [];
    for (const e of entries) {
      const p = path.join(e.parentPath, e.name);
      const mode = (await stat(p)).mode & 0o777;
      if (mode !== (e.isDirectory() ? 0o700 : 0o600)) open.push(`${path.relative(dir, p)} ${mode.toString(8)}`);
    }
    assert.deepEqual(open, []);
  });

  test('the admin listener binds to loopback (ADMIN_HOST) while HOST is another address', async () => {
    await server.waitFor(/"msg":"coffer started"/); // the log is written asynchronously
    const started = server
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; listeners?: Record<string, string> })
      .find((l) => l.msg === 'coffer started')!;
    assert.equal(started.listeners!.admin, `http://127.0.0.1:${server.ports.admin}`);
    assert.equal(started.listeners!.api, `http://127.0.0.2:${server.ports.api}`);
    assert.equal((await fetch(`http://127.0.0.1:${server.ports.admin}/health`)).status, 200);
    await assert.rejects(fetch(`http://127.0.0.2:${server.ports.admin}/health`));
    assert.equal((await fetch(`http://127.0.0.2:${server.ports.api}/health`)).status, 200);
  });
});

describe('a sandbox whose DATA_DIR holds an admin token of the older format (adm_…)', () => {
  const oldToken = 'adm_t0GQm2bL9xV4sKcY7rWfJ1nE8hUzPd3oAi6MgNqXZ5k';
  let dir: string;
  let server: ServerProcess;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'coffer-'));
    await writeFile(
      path.join(dir, 'secrets.json'),
      JSON.stringify({
        adminToken: oldToken,
        cardEncryptionKey: Buffer.alloc(32, 3).toString('base64'),
        widgetSigningKey: Buffer.alloc(32, 4).toString('base64'),
      }),
      { mode: 0o600 },
    );
    server = await startServer({ ...PGLITE, DATABASE_URL: await freshDatabaseUrl(), DATA_DIR: dir });
    await server.waitFor(/Stop with Ctrl-C/);
  });
  after(async () => {
    server.kill('SIGKILL');
    await server.exited;
    await rm(dir, { recursive: true, force: true });
  });

  test('starts and keeps that token: the admin API and the CLI take it', async () => {
    assert.ok(server.stdout().includes(oldToken), 'the banner shows the kept token');
    const res = await fetch(`http://127.0.0.1:${server.ports.admin}/admin/v1/clients`, {
      headers: { authorization: `Bearer ${oldToken}` },
    });
    assert.equal(res.status, 200);
    const { stdout } = await run(process.execPath, [CLI, 'clients', 'list'], {
      env: {
        ...process.env,
        ADMIN_TOKEN: '',
        DATA_DIR: dir,
        COFFER_ADMIN_URL: `http://127.0.0.1:${server.ports.admin}`,
      },
    });
    assert.ok(Array.isArray(JSON.parse(stdout).clients));
  });
});

describe('live', () => {
  test('refuses to start without DATABASE_URL, ADMIN_TOKEN, CARD_ENCRYPTION_KEY and WIDGET_SIGNING_KEY', async () => {
    const p = await startServer({ ...PGLITE, COFFER_ENV: 'live' });
    const { code } = await p.exited;
    assert.equal(code, 78);
    for (const name of ['DATABASE_URL', 'ADMIN_TOKEN', 'CARD_ENCRYPTION_KEY', 'WIDGET_SIGNING_KEY'])
      assert.match(p.stderr(), new RegExp(`live requires ${name}`));
  });

  test('refuses a chosen ADMIN_TOKEN, a wide TRUST_PROXY range and plain http off loopback: one line each, no stack', async () => {
    const p = await startServer({
      COFFER_ENV: 'live',
      // Never reached: the configuration is refused first.
      DATABASE_URL: 'postgres://coffer@127.0.0.1:9/coffer_live',
      ADMIN_TOKEN: 'CofferAdminToken2024ProductionSecretKey!',
      CARD_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
      WIDGET_SIGNING_KEY: Buffer.alloc(32, 2).toString('base64'),
      TRUST_PROXY: '0.0.0.0/0',
      CONSOLE_URL: 'http://console.example.com',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector.example.com:4318',
      ...providerEnv('http://127.0.0.1:9'),
    });
    assert.equal((await p.exited).code, 78, p.stderr());
    for (const line of [
      /ADMIN_TOKEN must be a generated token .*npx coffer token/,
      /live refuses TRUST_PROXY range 0\.0\.0\.0\/0/,
      /live refuses CONSOLE_URL=http:\/\/console\.example\.com/,
      /live refuses OTEL_EXPORTER_OTLP_ENDPOINT=http:\/\/collector\.example\.com:4318/,
    ])
      assert.match(p.stderr(), line);
    assert.doesNotMatch(p.stderr(), /\n\s+at /, 'a message, not a stack trace');
  });

  test('refuses a key that is not 32 bytes', async () => {
    const p = await startServer({
      ...PGLITE,
      COFFER_ENV: 'live',
      CARD_ENCRYPTION_KEY: Buffer.alloc(16).toString('base64'),
    });
    assert.equal((await p.exited).code, 78);
    assert.match(p.stderr(), /CARD_ENCRYPTION_KEY must be 32 bytes/);
  });

  test('starts on PostgreSQL with its secrets and a pool of one connection: no demo merchant, no simulations', {
    skip: dbKind !== 'postgres' && 'needs DATABASE_URL (runs in the PostgreSQL pass)',
  }, async () => {
    const url = await freshDatabaseUrl();
    const p = await startServer({
      COFFER_ENV: 'live',
      DATABASE_URL: url,
      ADMIN_TOKEN: LIVE_TOKEN,
      CARD_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
      WIDGET_SIGNING_KEY: Buffer.alloc(32, 2).toString('base64'),
      // The smallest pool allowed: the migrations' lock takes a connection of its own.
      DATABASE_POOL_SIZE: '1',
      // Live needs an adapter for every provider (src/providers/live-process.test.ts); none is called here.
      ...providerEnv('http://127.0.0.1:9'),
    });
    try {
      await p.waitFor(/Stop with Ctrl-C/);
      assert.doesNotMatch(p.stdout(), /Demo merchant/);
      assert.doesNotMatch(p.stdout(), /ADMIN_TOKEN/);
      const created = await fetch(`http://127.0.0.1:${p.ports.admin}/admin/v1/clients`, {
        method: 'POST',
        headers: { authorization: `Bearer ${LIVE_TOKEN}`, 'content-type': 'application/vnd.api+json' },
        body: JSON.stringify({ data: { type: 'Client', attributes: { name: 'Live Co' } } }),
      });
      const c = (await created.json()) as { data: { id: string; attributes: { secret: string } } };
      assert.match(c.data.attributes.secret, /^sk_live_/);
      const sim = await fetch(
        `http://127.0.0.1:${p.ports.api}/api/v1/simulation/users/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/linked-accounts`,
        {
          method: 'POST',
          headers: { 'client-id': c.data.id, authorization: `Bearer ${c.data.attributes.secret}` },
        },
      );
      assert.equal(sim.status, 404);
    } finally {
      p.kill('SIGTERM');
      assert.equal((await p.exited).code, 0);
    }
  });
});

describe('a database belongs to one environment', () => {
  /** A fresh database (PostgreSQL in that pass, a PGlite folder otherwise) already claimed by `environment`. */
  async function databaseOf(environment: 'sandbox' | 'live') {
    const dir = await mkdtemp(path.join(tmpdir(), 'coffer-'));
    const url = await freshDatabaseUrl();
    const database = await openDatabase({ databaseUrl: url, dataDir: dir, poolSize: 2 });
    await claimDatabaseEnvironment(database.db, { environment, now: new Date() });
    await database.close();
    return { dir, url };
  }

  test('a sandbox process refuses to start on a live database', async () => {
    const { dir, url } = await databaseOf('live');
    try {
      const p = await startServer({ ...PGLITE, DATA_DIR: dir, DATABASE_URL: url });
      assert.equal((await p.exited).code, 78, p.stderr());
      assert.match(
        p.stderr(),
        /this database belongs to the live environment; a sandbox process \(COFFER_ENV=sandbox\) refuses to start on it/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a live process refuses to start on a sandbox database', {
    skip: dbKind !== 'postgres' && 'live needs DATABASE_URL (runs in the PostgreSQL pass)',
  }, async () => {
    const { dir, url } = await databaseOf('sandbox');
    const p = await startServer({
      COFFER_ENV: 'live',
      DATABASE_URL: url,
      DATA_DIR: dir,
      ADMIN_TOKEN: LIVE_TOKEN,
      CARD_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
      WIDGET_SIGNING_KEY: Buffer.alloc(32, 2).toString('base64'),
      ...providerEnv('http://127.0.0.1:9'),
    });
    assert.equal((await p.exited).code, 78, p.stderr());
    assert.match(p.stderr(), /this database belongs to the sandbox environment; a live process/);
    await rm(dir, { recursive: true, force: true });
  });

  test('the first start records its environment; the same environment starts again', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'coffer-'));
    const url = await freshDatabaseUrl();
    try {
      for (let i = 0; i < 2; i++) {
        const p = await startServer({ ...PGLITE, DATA_DIR: dir, DATABASE_URL: url });
        await p.waitFor(/Stop with Ctrl-C/);
        p.kill('SIGTERM');
        const exit = await p.exited;
        assert.equal(exit.code, 0, `${JSON.stringify(exit)}\n${p.stderr()}`);
      }
      const database = await openDatabase({ databaseUrl: url, dataDir: dir, poolSize: 2 });
      await assert.rejects(
        claimDatabaseEnvironment(database.db, { environment: 'live', now: new Date() }),
        /belongs to the sandbox environment/,
      );
      await database.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a database migrated by a newer build', () => {
  test('an older build refuses to start on it and says why; it starts again once the database is back at its migrations', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'coffer-'));
    const url = await freshDatabaseUrl();
    const journal = JSON.parse(
      await readFile(new URL('./db/migrations/meta/_journal.json', import.meta.url), 'utf8'),
    ) as { entries: { when: number; tag: string }[] };
    const last = journal.entries.at(-1)!;
    const migrations = async (statement: ReturnType<typeof sql>) => {
      const database = await openDatabase({ databaseUrl: url, dataDir: dir, poolSize: 2, migrate: false });
      await database.db.execute(statement);
      await database.close();
    };
    try {
      await (await openDatabase({ databaseUrl: url, dataDir: dir, poolSize: 2 })).close();
      // What a newer build's next migration leaves in Drizzle's table.
      await migrations(
        sql`insert into drizzle.__drizzle_migrations (hash, created_at) values ('from-a-newer-build', ${last.when + 1000})`,
      );
      const refused = await startServer({ ...PGLITE, DATA_DIR: dir, DATABASE_URL: url });
      const ran = await Promise.race([
        refused.exited.then(() => false),
        refused.waitFor(/Stop with Ctrl-C/).then(
          () => true,
          () => false,
        ),
      ]);
      if (ran) refused.kill('SIGTERM');
      assert.equal(ran, false, 'the older build started');
      assert.equal((await refused.exited).code, 78, refused.stderr());
      assert.match(
        refused.stderr(),
        new RegExp(`coffer: the database was migrated by a newer Coffer .*this build's last is ${last.tag}`),
      );
      assert.doesNotMatch(refused.stderr(), /\n\s+at /, 'a message, not a stack trace');
      await migrations(sql`delete from drizzle.__drizzle_migrations where hash = 'from-a-newer-build'`);
      const started = await startServer({ ...PGLITE, DATA_DIR: dir, DATABASE_URL: url });
      await started.waitFor(/Stop with Ctrl-C/);
      started.kill('SIGTERM');
      assert.equal((await started.exited).code, 0, started.stderr());
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
