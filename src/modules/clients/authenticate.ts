// Client authentication: `Client-ID` + `Authorization: Bearer <secret>`. The secret is hashed
// and compared with every stored hash of that client in constant time (no early exit, and a
// dummy comparison for unknown clients), so timing reveals neither which part was wrong nor
// whether the client exists.
//
// A secret names its environment (`sk_sandbox_…`, `sk_live_…`): one of the other environment
// is refused even where its hash matches, so a sandbox secret never opens live, whatever database it
// finds (the database's own environment is checked at start: db/deployment.ts).
//
// Client records are cached per process for a few seconds (AUTH_CACHE_TTL_MS) because every
// API call needs them. Changes made through this process's admin API take effect at once;
// other processes see them within the TTL.
import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import type { Environment } from '../../config.ts';
import type { Executor } from '../../db/open.ts';
import { apiError } from '../../http/errors.ts';
import { hashSecret, secretPrefix } from './domain.ts';
import { resolveSettings, type ClientSettings } from './settings.ts';
import { findClientWithSecretHashes } from './sql.ts';

export interface AuthenticatedClient {
  id: string;
  name: string;
  disabled: boolean;
  settings: ClientSettings;
}

interface CacheEntry {
  client: AuthenticatedClient | null;
  hashes: Buffer[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const BEARER = /^Bearer +(\S{1,512})$/i;
const DUMMY_HASH = hashSecret('dummy secret for constant-time comparison');

export class ClientAuthenticator {
  readonly #db: Executor;
  readonly #cache: LRUCache<string, CacheEntry>;
  readonly #inflight = new Map<string, Promise<CacheEntry>>();
  readonly #environment: Environment;
  readonly #prefix: string;

  constructor(db: Executor, ttlMs: number, environment: Environment) {
    this.#db = db;
    this.#environment = environment;
    this.#prefix = secretPrefix(environment);
    this.#cache = new LRUCache<string, CacheEntry>({ max: 10_000, ttl: Math.max(ttlMs, 1) });
  }

  /**
   * The authenticated client, or a promise of it when the client record must be read first
   * (a cache hit answers synchronously: most requests, and no promise to allocate).
   */
  authenticate(
    clientIdHeader: unknown,
    authorizationHeader: unknown,
  ): AuthenticatedClient | Promise<AuthenticatedClient> {
    if (typeof clientIdHeader !== 'string' || typeof authorizationHeader !== 'string') {
      throw apiError('Unauthorized', 'Send the Client-ID header and Authorization: Bearer <secret>.');
    }
    const clientId = clientIdHeader.trim().toLowerCase();
    const bearer = BEARER.exec(authorizationHeader.trim());
    if (!UUID.test(clientId) || !bearer) {
      throw apiError('Unauthorized', 'Client-ID must be a UUID and Authorization must be "Bearer <secret>".');
    }
    const secret = bearer[1]!;
    const cached = this.#cache.get(clientId);
    if (cached) return this.#verify(cached, secret);
    return this.#load(clientId).then((entry) => this.#verify(entry, secret));
  }

  #verify(entry: CacheEntry, secret: string): AuthenticatedClient {
    const presented = hashSecret(secret);
    let match = false;
    for (const h of entry.hashes.length > 0 ? entry.hashes : [DUMMY_HASH]) {
      // Bitwise OR keeps going after a match so every hash is always compared.
      match = timingSafeEqual(presented, h) || match;
    }
    // After the comparisons, so every secret costs the same whatever its prefix.
    if (!secret.startsWith(this.#prefix)) {
      throw apiError('Unauthorized', `This is the ${this.#environment} environment: use a ${this.#prefix}… secret.`);
    }
    if (!match || entry.client === null) throw apiError('Unauthorized', 'The Client-ID and secret do not match.');
    if (entry.client.disabled) throw apiError('ClientDisabled');
    return entry.client;
  }

  /** Drops a cached client after an admin change made by this process. */
  invalidate(clientId: string): void {
    this.#cache.delete(clientId);
  }

  async #load(clientId: string): Promise<CacheEntry> {
    // Concurrent first requests for one client share a single read.
    let pending = this.#inflight.get(clientId);
    if (!pending) {
      pending = this.#read(clientId).finally(() => this.#inflight.delete(clientId));
      this.#inflight.set(clientId, pending);
    }
    return pending;
  }

  async #read(clientId: string): Promise<CacheEntry> {
    const found = await findClientWithSecretHashes(this.#db, clientId);
    const entry: CacheEntry = found
      ? {
          client: {
            id: found.client.id,
            name: found.client.name,
            disabled: found.client.disabled,
            settings: resolveSettings(found.client.settings),
          },
          hashes: found.hashes,
        }
      : { client: null, hashes: [] };
    this.#cache.set(clientId, entry);
    return entry;
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The merchant making the call; set by the client auth hook on every /api/v1 route. */
    client: AuthenticatedClient;
  }
}

/** The hook of the API and card listeners: every /api/v1 route's caller is a merchant. */
export function clientAuthHook(auth: ClientAuthenticator) {
  return (req: FastifyRequest, _reply: unknown, done: (err?: Error) => void) => {
    let result: ReturnType<ClientAuthenticator['authenticate']>;
    try {
      result = auth.authenticate(req.headers['client-id'], req.headers.authorization);
    } catch (err) {
      return done(err as Error);
    }
    if (!(result instanceof Promise)) {
      req.client = result;
      return done();
    }
    result.then((client) => {
      req.client = client;
      done();
    }, done);
  };
}
