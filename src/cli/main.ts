// `coffer`: the operator's CLI over the admin API (decisions §2).
//
//   coffer token
//   coffer clients create --name NAME [--settings JSON]
//   coffer clients list [--limit N] [--offset N]
//   coffer clients show CLIENT_ID
//   coffer clients update CLIENT_ID [--name NAME] [--disabled true|false] [--settings JSON]
//   coffer clients rotate-secret CLIENT_ID
//   coffer clients delete-secret CLIENT_ID SECRET_ID
//
// Options: --url (admin listener; default $COFFER_ADMIN_URL or http://127.0.0.1:$ADMIN_PORT),
// --token (default $ADMIN_TOKEN, else the sandbox's DATA_DIR/secrets.json).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadCliConfig } from '../config.ts';
import { generateToken } from '../crypto/tokens.ts';

const USAGE = `usage:
  coffer token                  print a new ADMIN_TOKEN or METRICS_TOKEN
  coffer clients create --name NAME [--settings JSON]
  coffer clients list [--limit N] [--offset N]
  coffer clients show CLIENT_ID
  coffer clients update CLIENT_ID [--name NAME] [--disabled true|false] [--settings JSON]
  coffer clients rotate-secret CLIENT_ID
  coffer clients delete-secret CLIENT_ID SECRET_ID
options: --url ADMIN_URL  --token ADMIN_TOKEN`;

class CliError extends Error {}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      settings: { type: 'string' },
      disabled: { type: 'string' },
      limit: { type: 'string' },
      offset: { type: 'string' },
      url: { type: 'string' },
      token: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [resource, command, ...args] = positionals;
  if (resource === 'token' && command === undefined && !values.help) {
    process.stdout.write(`${generateToken()}\n`);
    return 0;
  }
  if (values.help || resource !== 'clients' || !command) {
    process.stdout.write(`${USAGE}\n`);
    return values.help ? 0 : 64;
  }
  const cfg = loadCliConfig();
  const url = values.url ?? cfg.adminUrl;
  const token = values.token ?? cfg.adminToken ?? (await sandboxToken(cfg.dataDir));
  if (!token) throw new CliError('no admin token: pass --token or set ADMIN_TOKEN');
  const call = (method: string, p: string, body?: unknown) => request(url, token, method, p, body);
  const settings = values.settings === undefined ? undefined : parseJson(values.settings, '--settings');
  const need = (n: number) => {
    if (args.length !== n) throw new CliError(`clients ${command} takes ${n} argument(s)\n${USAGE}`);
    return args;
  };

  let out: unknown;
  switch (command) {
    case 'create': {
      need(0);
      if (!values.name) throw new CliError('clients create needs --name');
      const res = await call('POST', '/admin/v1/clients', {
        data: { type: 'Client', attributes: { name: values.name, ...(settings ? { settings } : {}) } },
      });
      const a = res.data.attributes;
      out = { clientId: res.data.id, name: a.name, secret: a.secret, secretId: a.secretId, settings: a.settings };
      break;
    }
    case 'list': {
      need(0);
      const q = new URLSearchParams();
      if (values.limit) q.set('page[limit]', values.limit);
      if (values.offset) q.set('page[offset]', values.offset);
      const res = await call('GET', `/admin/v1/clients${q.size ? `?${q}` : ''}`);
      out = { clients: res.data.map(flatten), meta: res.meta };
      break;
    }
    case 'show':
      out = flatten((await call('GET', `/admin/v1/clients/${need(1)[0]}`)).data);
      break;
    case 'update': {
      const [id] = need(1);
      const attributes: Record<string, unknown> = {};
      if (values.name !== undefined) attributes.name = values.name;
      if (values.disabled !== undefined) {
        if (values.disabled !== 'true' && values.disabled !== 'false')
          throw new CliError('--disabled takes true or false');
        attributes.disabled = values.disabled === 'true';
      }
      if (settings !== undefined) attributes.settings = settings;
      out = flatten((await call('PATCH', `/admin/v1/clients/${id}`, { data: { type: 'Client', attributes } })).data);
      break;
    }
    case 'rotate-secret': {
      const res = await call('POST', `/admin/v1/clients/${need(1)[0]}/secrets`);
      out = { secretId: res.data.id, secret: res.data.attributes.secret, createdAt: res.data.attributes.createdAt };
      break;
    }
    case 'delete-secret': {
      const [id, secretId] = need(2);
      await call('DELETE', `/admin/v1/clients/${id}/secrets/${secretId}`);
      out = { deleted: secretId };
      break;
    }
    default:
      throw new CliError(`unknown command "clients ${command}"\n${USAGE}`);
  }
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  return 0;
}

function flatten(resource: { id: string; attributes: Record<string, unknown> }) {
  return { clientId: resource.id, ...resource.attributes };
}

function parseJson(text: string, flag: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError(`${flag} must be JSON`);
  }
}

async function sandboxToken(dataDir: string): Promise<string | undefined> {
  try {
    return (JSON.parse(await readFile(path.join(dataDir, 'secrets.json'), 'utf8')) as { adminToken?: string })
      .adminToken;
  } catch {
    return undefined;
  }
}

// biome-ignore lint/suspicious/noExplicitAny: each command reads its own answer's fields
async function request(base: string, token: string, method: string, p: string, body?: unknown): Promise<any> {
  let res: globalThis.Response;
  try {
    res = await fetch(base + p, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/vnd.api+json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
  } catch (err) {
    throw new CliError(`cannot reach the admin API at ${base}: ${(err as Error).message}`);
  }
  const text = await res.text();
  const json = text ? JSON.parse(text) : undefined;
  if (!res.ok) {
    const errors = (json?.errors ?? []) as { code: string; detail: string; source?: { pointer?: string } }[];
    throw new CliError(
      errors
        .map((e) => `${res.status} ${e.code}: ${e.detail}${e.source?.pointer ? ` (${e.source.pointer})` : ''}`)
        .join('\n') || `HTTP ${res.status}`,
    );
  }
  return json;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(
      `coffer: ${err instanceof CliError ? err.message : err instanceof Error ? err.stack : String(err)}\n`,
    );
    process.exit(err instanceof CliError ? 1 : 70);
  },
);
