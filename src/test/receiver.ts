// A real HTTP server on loopback that records what it receives: the webhook receiver in tests.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { isPublicAddress } from '../modules/webhooks/url-policy.ts';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Resolves when `n` requests have arrived (or rejects after timeoutMs). */
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

type Answer = { status: number; body?: string; headers?: Record<string, string> } | 'hang';

export async function startReceiver(
  answer: (r: Received, index: number) => Answer | Promise<Answer> = () => ({ status: 200 }),
  port = 0,
): Promise<Receiver> {
  const received: Received[] = [];
  const waiters: (() => void)[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const r: Received = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      const index = received.push(r) - 1;
      waiters.forEach((w) => w());
      const a = await answer(r, index);
      if (a === 'hang') return; // never answer
      res.writeHead(a.status, a.headers ?? {});
      res.end(a.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const actualPort = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${actualPort}/hooks`,
    port: actualPort,
    received,
    waitFor(n, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`receiver got ${received.length} of ${n} requests`)),
          timeoutMs,
        );
        const check = () => {
          if (received.length >= n) {
            clearTimeout(timer);
            resolve();
          }
        };
        waiters.push(check);
        check();
      });
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * An address test for apps whose receivers on loopback stand for public ones: their attempts
 * show what they answered, as a public receiver's do (a private receiver's show only whether the
 * delivery was taken). Registering them still needs LOCAL_RECEIVERS.
 */
export const loopbackIsPublic = (address: string): boolean => address === '127.0.0.1' || isPublicAddress(address);
