// Authentication hooks: merchants on the API and card listeners, the operator on admin.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { AuthenticatedClient, ClientAuthenticator } from '../modules/clients/authenticate.ts';
import { apiError } from './errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The merchant making the call; set by the client auth hook on every /api/v1 route. */
    client: AuthenticatedClient;
  }
}

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

export function adminAuthHook(adminToken: string) {
  const expected = createHash('sha256').update(adminToken).digest();
  return async (req: FastifyRequest) => {
    const m = /^Bearer +(\S{1,1024})$/i.exec(req.headers.authorization ?? '');
    const presented = createHash('sha256')
      .update(m?.[1] ?? '')
      .digest();
    if (!m || !timingSafeEqual(presented, expected)) {
      throw apiError('Unauthorized', 'Send Authorization: Bearer <ADMIN_TOKEN>.');
    }
  };
}
