// A browser for console tests: cookies kept between requests (Fastify inject), the sign-in
// form's CSRF token read from the page, a source address of its own (rate limits).
import type { App } from '../http/server.ts';
import { randomIp } from './harness.ts';

export interface Browser {
  cookies: Map<string, string>;
  ip: string;
}

export const browser = (): Browser => ({ cookies: new Map(), ip: randomIp() });

export async function call(app: App, b: Browser, method: 'GET' | 'POST', url: string, form?: Record<string, string>) {
  const res = await app.inject({
    method,
    url,
    remoteAddress: b.ip,
    headers: {
      cookie: [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
      ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
    },
    ...(form ? { payload: new URLSearchParams(form).toString() } : {}),
  });
  const set = res.headers['set-cookie'];
  for (const c of set === undefined ? [] : Array.isArray(set) ? set : [set]) {
    const [pair] = c.split(';');
    const [name, value] = pair!.split('=') as [string, string];
    if (value === '' || /Max-Age=0/.test(c)) b.cookies.delete(name);
    else b.cookies.set(name, value);
  }
  return res;
}

export const csrfOf = (body: string) => /name="_csrf" value="([^"]+)"/.exec(body)?.[1] ?? '';

export async function signIn(app: App, b: Browser, fields: Record<string, string>) {
  const form = await call(app, b, 'GET', '/sign-in');
  return call(app, b, 'POST', '/sign-in', { _csrf: csrfOf(form.body), ...fields });
}
