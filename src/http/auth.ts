// The operator's authentication on the admin listener (merchants': modules/clients/authenticate.ts).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { apiError } from './errors.ts';

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
