// The operator's admin API and the `coffer` CLI over it (docs/adr/0011-admin-api-and-cli.md).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../config.ts';
import { ADMIN_TOKEN, createTestApp, errorsOf, type TestApp } from '../../test/harness.ts';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../../bin/coffer.mjs', import.meta.url));
const clientBody = (attributes: Record<string, unknown>) => ({ data: { type: 'Client', attributes } });

describe('admin API', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('needs the admin token', async () => {
    for (const authorization of [undefined, 'Bearer wrong', `Basic ${ADMIN_TOKEN}`, ADMIN_TOKEN]) {
      const res = await t.admin.inject({
        method: 'GET',
        url: '/admin/v1/clients',
        headers: authorization ? { authorization } : {},
      });
      assert.equal(res.statusCode, 401, String(authorization));
      assert.equal(res.json().errors[0].code, 'Unauthorized');
    }
  });

  test('create shows the secret once with its id; reads never show it', async () => {
    const res = await t.adminRequest('POST', '/admin/v1/clients', { body: clientBody({ name: 'Acme' }) });
    assert.equal(res.status, 201);
    const { id, attributes: a } = res.body.data;
    assert.equal(a.name, 'Acme');
    assert.equal(a.disabled, false);
    assert.match(a.secret, /^sk_sandbox_/);
    assert.equal(a.secrets.length, 1);
    assert.equal(a.secrets[0].id, a.secretId);
    const got = await t.adminRequest('GET', `/admin/v1/clients/${id}`);
    assert.equal(got.status, 200);
    assert.equal(got.body.data.attributes.secret, undefined);
    assert.equal(got.body.data.attributes.secretId, undefined);
    assert.ok(!got.raw.includes(a.secret));
    assert.equal(got.body.data.attributes.secrets[0].hint, a.secret.slice(-4));
  });

  test('settings default as docs/operations.md lists them and merge on PATCH', async () => {
    const res = await t.adminRequest('POST', '/admin/v1/clients', {
      body: clientBody({ name: 'S', settings: { captureMode: 'automatic', cardProcessor: { enabled: true } } }),
    });
    const s = res.body.data.attributes.settings;
    assert.equal(s.captureMode, 'automatic');
    assert.deepEqual(s.cardProcessor, { enabled: true, latencyMs: 2000 });
    assert.equal(s.rails, 'bank');
    assert.equal(s.achFee, 0);
    assert.equal(s.feeCounterpartyId, null);
    assert.equal(s.depositRewardBps, 0);
    assert.equal(s.rewardMinimumPurchase, 0);
    assert.equal(s.maxOneTimeDeposit, 1_000_000);
    assert.equal(s.bankFundingLimit, 500_000);
    assert.equal(s.paymentIntentTtlSeconds, 900);
    assert.equal(s.widget.toggleStyle, 'switch');
    const id = res.body.data.id;
    const patched = await t.adminRequest('PATCH', `/admin/v1/clients/${id}`, {
      body: clientBody({
        name: 'S2',
        settings: { cardProcessor: { latencyMs: 10 }, widget: { buttonText: 'Pay now' } },
      }),
    });
    assert.equal(patched.status, 200);
    const p = patched.body.data.attributes;
    assert.equal(p.name, 'S2');
    assert.equal(p.settings.captureMode, 'automatic', 'untouched settings stay');
    assert.deepEqual(p.settings.cardProcessor, { enabled: true, latencyMs: 10 }, 'nested objects merge');
    assert.equal(p.settings.widget.buttonText, 'Pay now');
    assert.equal(p.settings.widget.toggleStyle, 'switch');
  });

  test('invalid settings and bodies are 400 with pointers', async () => {
    const res = await t.adminRequest('POST', '/admin/v1/clients', {
      body: clientBody({
        name: '',
        settings: { captureMode: 'sometimes', achFee: -1, bogus: 1, cardProcessor: { latencyMs: 'slow' } },
      }),
    });
    assert.equal(res.status, 400);
    const pointers = errorsOf(res)
      .map((e) => e.source?.pointer)
      .sort();
    assert.deepEqual(pointers, [
      '/data/attributes/name',
      '/data/attributes/settings/achFee',
      '/data/attributes/settings/bogus',
      '/data/attributes/settings/captureMode',
      '/data/attributes/settings/cardProcessor/latencyMs',
    ]);
    const created = await t.adminRequest('POST', '/admin/v1/clients', { body: clientBody({ name: 'x' }) });
    const empty = await t.adminRequest('PATCH', `/admin/v1/clients/${created.body.data.id}`, { body: clientBody({}) });
    assert.equal(empty.status, 400);
  });

  test('list pages through clients', async () => {
    const res = await t.adminRequest('GET', '/admin/v1/clients?page[limit]=2');
    assert.equal(res.status, 200);
    assert.equal(res.body.data.length, 2);
    assert.ok(res.body.meta.total >= 2);
    assert.ok(res.body.data.every((c: { attributes: { secret?: string } }) => c.attributes.secret === undefined));
  });

  test('unknown clients and secrets are 404', async () => {
    const missing = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    for (const [method, url] of [
      ['GET', `/admin/v1/clients/${missing}`],
      ['POST', `/admin/v1/clients/${missing}/secrets`],
      ['DELETE', `/admin/v1/clients/${missing}/secrets/${missing}`],
    ] as const) {
      const res = await t.adminRequest(method, url);
      assert.equal(res.status, 404, url);
    }
    const patch = await t.adminRequest('PATCH', `/admin/v1/clients/${missing}`, { body: clientBody({ name: 'x' }) });
    assert.equal(patch.status, 404);
    const m = await t.createMerchant();
    const res = await t.adminRequest('DELETE', `/admin/v1/clients/${m.clientId}/secrets/${missing}`);
    assert.equal(res.status, 404);
    assert.equal(errorsOf(res)[0]!.code, 'ClientSecretNotFound');
  });

  test('the operator can check the ledger', async () => {
    const res = await t.adminRequest('GET', '/admin/v1/ledger/verify');
    assert.equal(res.status, 200);
    assert.equal(res.body.data.type, 'LedgerReport');
    assert.equal(res.body.data.attributes.sound, true, JSON.stringify(res.body.data.attributes.violations));
    assert.equal((await t.admin.inject({ method: 'GET', url: '/admin/v1/ledger/verify' })).statusCode, 401);
  });

  test('the admin OpenAPI document lists the admin routes, for the token holder only', async () => {
    const res = await t.adminRequest('GET', '/admin/v1/openapi.json');
    assert.equal(res.status, 200);
    assert.ok(res.body.paths['/admin/v1/clients/{clientId}/secrets/{secretId}'].delete);
    for (const authorization of [undefined, 'Bearer wrong']) {
      const anon = await t.admin.inject({
        method: 'GET',
        url: '/admin/v1/openapi.json',
        headers: authorization ? { authorization } : {},
      });
      assert.equal(anon.statusCode, 401, String(authorization));
      assert.equal(anon.json().errors[0].code, 'Unauthorized');
    }
  });
});

/** The CLI tests' folder: token files, and an empty DATA_DIR (no sandbox secrets). */
let dir: string;

describe('coffer CLI', () => {
  let t: TestApp;
  let url: string;
  before(async () => {
    t = await createTestApp();
    url = await t.admin.listen({ host: '127.0.0.1', port: 0 });
    dir = await mkdtemp(path.join(tmpdir(), 'coffer-cli-'));
  });
  after(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  const cli = async (...args: string[]) => {
    const { stdout } = await run(process.execPath, [CLI, ...args, '--url', url], {
      env: { ...process.env, ADMIN_TOKEN },
    });
    return JSON.parse(stdout);
  };

  test('clients create --name prints JSON with clientId and secret that work on the API', async () => {
    const out = await cli('clients', 'create', '--name', 'From CLI');
    assert.match(out.clientId, /^[0-9a-f-]{36}$/);
    assert.match(out.secret, /^sk_sandbox_/);
    assert.equal(out.name, 'From CLI');
    const res = await t.request('GET', '/api/v1/users', {
      headers: { 'client-id': out.clientId, authorization: `Bearer ${out.secret}` },
    });
    assert.equal(res.status, 200);
  });

  test('list, show, update, rotate-secret and delete-secret', async () => {
    const created = await cli('clients', 'create', '--name', 'Ops', '--settings', '{"captureMode":"automatic"}');
    assert.equal(created.settings.captureMode, 'automatic');
    const shown = await cli('clients', 'show', created.clientId);
    assert.equal(shown.name, 'Ops');
    assert.equal(shown.secret, undefined);
    const updated = await cli('clients', 'update', created.clientId, '--name', 'Ops 2', '--disabled', 'true');
    assert.equal(updated.name, 'Ops 2');
    assert.equal(updated.disabled, true);
    const rotated = await cli('clients', 'rotate-secret', created.clientId);
    assert.match(rotated.secret, /^sk_sandbox_/);
    const deleted = await cli('clients', 'delete-secret', created.clientId, created.secretId);
    assert.equal(deleted.deleted, created.secretId);
    // The run's database is shared with other tests' clients, so walk the pages.
    let found = false;
    for (let offset = 0; !found; ) {
      const listed = await cli('clients', 'list', '--limit', '50', '--offset', String(offset));
      if (listed.clients.length === 0) break;
      found = listed.clients.some((c: { clientId: string }) => c.clientId === created.clientId);
      offset += listed.clients.length;
    }
    assert.ok(found, 'the created client is on one of the pages');
  });

  test('errors are reported on stderr with a non-zero exit', async () => {
    await assert.rejects(
      run(process.execPath, [CLI, 'clients', 'show', '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', '--url', url], {
        env: { ...process.env, ADMIN_TOKEN },
      }),
      (err: { code: number; stderr: string }) => err.code === 1 && /404 ClientNotFound/.test(err.stderr),
    );
    const wrong = await tokenFile('wrong');
    await assert.rejects(
      run(process.execPath, [CLI, 'clients', 'list', '--url', url, '--token-file', wrong], {
        env: { ...process.env, ADMIN_TOKEN: '' },
      }),
      (err: { code: number; stderr: string }) =>
        err.code === 1 &&
        /401 Unauthorized.*\n.*not this server's ADMIN_TOKEN.*DATA_DIR\/secrets\.json/.test(err.stderr),
    );
  });

  test('an admin API it cannot reach: the message says to start Coffer or point --url at it', async () => {
    const down = await outcome(['clients', 'list'], { ADMIN_TOKEN, COFFER_ADMIN_URL: 'http://127.0.0.1:1' });
    assert.equal(down.code, 1);
    assert.match(
      down.stderr,
      /^coffer: cannot reach the admin API at http:\/\/127\.0\.0\.1:1: .*npm start.*--url.*COFFER_ADMIN_URL/,
    );
  });

  /** The CLI's exit code and output, run without ADMIN_TOKEN and with an empty DATA_DIR unless `env` says otherwise. */
  const outcome = async (args: string[], env: Record<string, string> = {}) => {
    try {
      const { stdout, stderr } = await run(process.execPath, [CLI, ...args], {
        env: { ...process.env, ADMIN_TOKEN: '', DATA_DIR: dir, COFFER_ADMIN_URL: url, ...env },
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };

  test('token prints a new generated token, which ADMIN_TOKEN and METRICS_TOKEN accept', async () => {
    const one = (await run(process.execPath, [CLI, 'token'])).stdout.trim();
    const two = (await run(process.execPath, [CLI, 'token'])).stdout.trim();
    assert.match(one, /^cft_[A-Za-z0-9_-]{48}$/);
    assert.notEqual(one, two);
    assert.equal(loadConfig({ ADMIN_TOKEN: one, METRICS_TOKEN: two }).adminToken, one);
  });

  test('--token is refused (ps shows it) with the alternatives; --token-file and ADMIN_TOKEN are read', async () => {
    const refused = await outcome(['clients', 'list', '--token', ADMIN_TOKEN], { ADMIN_TOKEN });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^coffer: --token is refused: .*--token-file FILE.*ADMIN_TOKEN/);
    assert.doesNotMatch(refused.stderr, /\n\s+at /);
    const file = await tokenFile(`${ADMIN_TOKEN}\n`);
    const listed = await outcome(['clients', 'list', '--limit', '1', '--token-file', file]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(JSON.parse(listed.stdout).clients.length, 1);
    const missing = await outcome(['clients', 'list', '--token-file', path.join(dir, 'nowhere')]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^coffer: cannot read --token-file .*nowhere/);
  });

  test('without a token the message names ADMIN_TOKEN, --token-file and DATA_DIR/secrets.json', async () => {
    const none = await outcome(['clients', 'list']);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /^coffer: no admin token: set ADMIN_TOKEN .*--token-file FILE.*DATA_DIR\/secrets\.json/);
    assert.ok(none.stderr.includes(path.join(dir, 'secrets.json')), none.stderr);
  });

  test('ids are sent as one encoded path segment each; . and .. are refused', async () => {
    const {
      server,
      url: fake,
      paths,
    } = await recorder(200, 'application/vnd.api+json', '{"data":{"id":"x","attributes":{}}}');
    try {
      const env = { ADMIN_TOKEN, COFFER_ADMIN_URL: fake };
      assert.equal((await outcome(['clients', 'show', '../../metrics'], env)).code, 0);
      assert.equal((await outcome(['clients', 'delete-secret', 'a/b?c#d', '%2e%2e'], env)).code, 0);
      assert.deepEqual(paths, [
        '/admin/v1/clients/..%2F..%2Fmetrics',
        '/admin/v1/clients/a%2Fb%3Fc%23d/secrets/%252e%252e',
      ]);
      for (const args of [
        ['clients', 'show', '..'],
        ['clients', 'rotate-secret', '.'],
        ['clients', 'delete-secret', 'x', '..'],
      ]) {
        const r = await outcome(args, env);
        assert.equal(r.code, 1, args.join(' '));
        assert.match(r.stderr, /is not an id/);
      }
      assert.equal(paths.length, 2, 'nothing sent for a refused id');
    } finally {
      server.close();
    }
    // Against the admin listener, the encoded id is a client id (not a valid one), never another route.
    const shown = await outcome(['clients', 'show', '../../metrics'], { ADMIN_TOKEN });
    assert.equal(shown.code, 1);
    assert.match(shown.stderr, /^coffer: 400 BadRequest: `clientId` must be a valid UUID/);
  });

  test('an answer that is not JSON is one line with its status and what to check, not a stack', async () => {
    const { server, url: fake } = await recorder(502, 'text/html', '<html><body>Bad Gateway</body></html>');
    try {
      const r = await outcome(['clients', 'list'], { ADMIN_TOKEN, COFFER_ADMIN_URL: fake });
      assert.equal(r.code, 1);
      assert.equal(
        r.stderr,
        `coffer: GET ${fake}/admin/v1/clients answered 502 with text/html, not JSON: check that --url or COFFER_ADMIN_URL is the admin listener (ADMIN_HOST:ADMIN_PORT)\n`,
      );
    } finally {
      server.close();
    }
  });
});

/** A file in the suite's folder holding `content`, readable by this user only. */
async function tokenFile(content: string): Promise<string> {
  const file = path.join(dir, `token-${randomBytes(4).toString('hex')}`);
  await writeFile(file, content, { mode: 0o600 });
  return file;
}

/** An HTTP server that answers every request alike and records the paths asked for. */
async function recorder(status: number, type: string, body: string) {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(req.url ?? '');
    res.writeHead(status, { 'content-type': type }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, paths };
}
