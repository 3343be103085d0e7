// `coffer`: the operator's CLI over the admin API (docs/adr/0011-admin-api-and-cli.md).
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
// --token-file (a file holding the token; default $ADMIN_TOKEN, else the sandbox's
// DATA_DIR/secrets.json). No --token: a command line is visible to every user of the host (`ps`).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadCliConfig, type CliConfig } from '../config.ts';
import { generateToken } from '../crypto/tokens.ts';

const USAGE = `usage:
  coffer token                  print a new ADMIN_TOKEN or METRICS_TOKEN
  coffer clients create --name NAME [--settings JSON]
  coffer clients list [--limit N] [--offset N]
  coffer clients show CLIENT_ID
  coffer clients update CLIENT_ID [--name NAME] [--disabled true|false] [--settings JSON]
  coffer clients rotate-secret CLIENT_ID
  coffer clients delete-secret CLIENT_ID SECRET_ID
options: --url ADMIN_URL  --token-file FILE
the admin token comes from --token-file, else $ADMIN_TOKEN, else the sandbox's $DATA_DIR/secrets.json`;

class CliError extends Error {}

const UNAUTHORIZED_HINT =
  "\nthe token is not this server's ADMIN_TOKEN: use the one it was started with (a sandbox keeps the one it generated in its DATA_DIR/secrets.json)";

const OPTIONS = {
  name: { type: 'string' },
  settings: { type: 'string' },
  disabled: { type: 'string' },
  limit: { type: 'string' },
  offset: { type: 'string' },
  url: { type: 'string' },
  'token-file': { type: 'string' },
  // Only to refuse it with the alternatives (below).
  token: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function parseCommandLine(argv: string[]) {
  try {
    return parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (err) {
    // An unknown or incomplete option: the parser's own one-line message, not a stack.
    throw new CliError(`${(err as Error).message}\n${USAGE}`);
  }
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommandLine(argv);
  const [resource, command, ...args] = positionals;
  if (values.token !== undefined)
    throw new CliError(
      '--token is refused: a command line is visible to every user of the host (ps). Put the token in a file and pass --token-file FILE, or set ADMIN_TOKEN in the environment',
    );
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
  const token = await adminToken(values['token-file'], cfg);
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
      out = flatten((await call('GET', `/admin/v1/clients/${segment(need(1)[0])}`)).data);
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
      out = flatten(
        (await call('PATCH', `/admin/v1/clients/${segment(id)}`, { data: { type: 'Client', attributes } })).data,
      );
      break;
    }
    case 'rotate-secret': {
      const res = await call('POST', `/admin/v1/clients/${segment(need(1)[0])}/secrets`);
      out = { secretId: res.data.id, secret: res.data.attributes.secret, createdAt: res.data.attributes.createdAt };
      break;
    }
    case 'delete-secret': {
      const [id, secretId] = need(2);
      await call('DELETE', `/admin/v1/clients/${segment(id)}/secrets/${segment(secretId)}`);
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

/**
 * An id as one path segment: encoded, so `../../metrics` cannot climb out of the path it was
 * given; `.` and `..` alone are refused, since URL parsing climbs on them, encoded or not.
 */
function segment(id: string | undefined): string {
  if (!id || id === '.' || id === '..') throw new CliError(`"${id ?? ''}" is not an id`);
  return encodeURIComponent(id);
}

/** The admin token: from --token-file, else ADMIN_TOKEN, else the sandbox's DATA_DIR/secrets.json. */
async function adminToken(tokenFile: string | undefined, cfg: CliConfig): Promise<string> {
  if (tokenFile !== undefined) {
    let text: string;
    try {
      text = await readFile(tokenFile, 'utf8');
    } catch (err) {
      throw new CliError(`cannot read --token-file ${tokenFile}: ${(err as Error).message}`);
    }
    const token = text.trim();
    if (!token) throw new CliError(`--token-file ${tokenFile} is empty: it must hold the admin token`);
    return token;
  }
  if (cfg.adminToken) return cfg.adminToken;
  const secrets = path.join(cfg.dataDir, 'secrets.json');
  try {
    const stored = (JSON.parse(await readFile(secrets, 'utf8')) as { adminToken?: unknown }).adminToken;
    if (typeof stored === 'string' && stored) return stored;
  } catch {
    /* no sandbox secrets here */
  }
  throw new CliError(
    `no admin token: set ADMIN_TOKEN in the environment, pass --token-file FILE (a file holding it), or run where the sandbox's DATA_DIR/secrets.json is (looked for ${secrets}; set DATA_DIR to the sandbox's data folder)`,
  );
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
    throw new CliError(
      `cannot reach the admin API at ${base}: ${(err as Error).message}. Is Coffer running (npm start)? If it listens elsewhere, pass --url or set COFFER_ADMIN_URL (or ADMIN_PORT)`,
    );
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    // A proxy's error page, or another service on that port.
    const type = res.headers.get('content-type') ?? 'no content type';
    throw new CliError(
      `${method} ${base}${p} answered ${res.status} with ${type}, not JSON: check that --url or COFFER_ADMIN_URL is the admin listener (ADMIN_HOST:ADMIN_PORT)`,
    );
  }
  if (!res.ok) {
    const errors = ((json as { errors?: unknown } | undefined)?.errors ?? []) as {
      code: string;
      detail: string;
      source?: { pointer?: string };
    }[];
    throw new CliError(
      (Array.isArray(errors) ? errors : [])
        .map((e) => `${res.status} ${e.code}: ${e.detail}${e.source?.pointer ? ` (${e.source.pointer})` : ''}`)
        .join('\n') + (res.status === 401 ? UNAUTHORIZED_HINT : '') || `HTTP ${res.status}`,
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
