// Slow clients (docs/operations.md#security-notes): a request whose body never finishes arriving
// is cut off at REQUEST_TIMEOUT_MS; a connection's pipelined requests are answered one at a time,
// at most MAX_PIPELINED_REQUESTS wait, and one whose client stops reading a response for
// WRITE_TIMEOUT_MS is reset. Real sockets against a listening app, and against a server process
// whose memory (RSS, from /proc) and /health latency are measured under a slow-reader attack.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { ADMIN_TOKEN, createTestApp, freshDatabaseUrl, type Merchant, type TestApp } from '../test/harness.ts';
import { serverEnv, startServer, type ServerProcess } from '../test/process.ts';

/** A raw connection (one that never reads unless `read`), with what it received and how it ended. */
function rawClient(port: number, read = true) {
  const socket = connect(port, '127.0.0.1');
  if (!read) socket.pause();
  let received = '';
  socket.on('data', (d) => (received += d.toString()));
  // A reset connection reports ECONNRESET or just ends, depending on what it had read.
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  return { socket, closed, received: () => received };
}

/** How many answers (status lines) a raw connection has received. */
const answers = (c: ReturnType<typeof rawClient>) => (c.received().match(/HTTP\/1\.1 \d{3}/g) ?? []).length;

/** Resolves true when `p` settles within `ms`. */
const within = (p: Promise<unknown>, ms: number) => Promise.race([p.then(() => true), sleep(ms).then(() => false)]);

const OPENAPI = 'GET /api/v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';

describe('slow clients', () => {
  let t: TestApp;
  let m: Merchant;
  let port: number;
  before(async () => {
    t = await createTestApp({
      env: { REQUEST_TIMEOUT_MS: '1000', WRITE_TIMEOUT_MS: '1000', MAX_PIPELINED_REQUESTS: '16' },
    });
    m = await t.createMerchant();
    await t.api.listen({ host: '127.0.0.1', port: 0 });
    port = (t.api.server.address() as AddressInfo).port;
  });
  after(() => t.close());

  test('a body that stops arriving is cut off: the connection is closed (408 at most) within the timeout', async () => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d) => (received += d.toString()));
    const started = Date.now();
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write(
      [
        'POST /api/v1/users HTTP/1.1',
        'Host: 127.0.0.1',
        `Client-ID: ${m.clientId}`,
        `Authorization: Bearer ${m.secret}`,
        'Content-Type: application/vnd.api+json',
        'Content-Length: 1000',
        '',
        '{"data":{"type":"User",',
      ].join('\r\n'),
    );
    await closed;
    const elapsed = Date.now() - started;
    assert.ok(elapsed < 4_000, `closed after ${elapsed} ms`);
    // Node may answer 408 before closing, or just close (the connection timer fires first).
    assert.ok(received === '' || /^HTTP\/1\.1 408/.test(received), received);
    assert.ok(elapsed >= 900, `closed after only ${elapsed} ms`);
  });

  test('pipelined requests up to MAX_PIPELINED_REQUESTS waiting are all answered, in order', async () => {
    const c = rawClient(port);
    const ids = ['p-1', 'p-2', 'p-3', 'p-4', 'p-5'];
    c.socket.write(ids.map((id) => `GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: ${id}\r\n\r\n`).join(''));
    const until = Date.now() + 5_000;
    while (answers(c) < ids.length && Date.now() < until) await sleep(20);
    assert.deepEqual(
      [...c.received().matchAll(/x-request-id: (\S+)/g)].map((r) => r[1]),
      ids,
    );
    assert.equal(c.socket.closed, false);
    c.socket.destroy();
  });

  test('a connection with more than MAX_PIPELINED_REQUESTS waiting is closed', async () => {
    const c = rawClient(port);
    // One being answered, 16 waiting, and one more.
    c.socket.write(OPENAPI.repeat(18));
    const ended = await within(c.closed, 3_000);
    c.socket.destroy();
    assert.ok(ended, 'the connection is still open');
    // The first answer may have gone out before the reset; the last ones never do.
    assert.ok(answers(c) < 18, `${answers(c)} answers`);
  });

  test('a connection whose client stops reading a response for WRITE_TIMEOUT_MS is closed', async () => {
    // Its own app: the idle timeout (REQUEST_TIMEOUT_MS, 1 s above) would close the connection first.
    const own = await createTestApp({ env: { WRITE_TIMEOUT_MS: '1000' } });
    await own.api.listen({ host: '127.0.0.1', port: 0 });
    const ownPort = (own.api.server.address() as AddressInfo).port;
    // 17 documents (6 MB) are more than the kernel's buffers take on loopback (tcp_wmem's 4 MB).
    const clients = Array.from({ length: 3 }, () => rawClient(ownPort, false));
    try {
      for (const c of clients) c.socket.write(OPENAPI.repeat(17));
      await sleep(3_000);
      // Reading again, a reset connection ends once it has read what the kernel kept for it; one
      // the server kept open reads all its answers and stays open.
      for (const c of clients) c.socket.resume();
      for (const c of clients) {
        assert.ok(await within(c.closed, 2_000), 'the connection is still open');
        assert.ok(answers(c) < 17, `${answers(c)} answers`);
      }
    } finally {
      for (const c of clients) c.socket.destroy();
      await own.close();
    }
  });
});

const WRITE_TIMEOUT_MS = 2_000;
const CONNECTIONS = 100;
const PIPELINED = 20;

/** The process's resident set size in MB, from /proc. */
function rssMb(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

/** One GET over a kept-alive connection, resolved with its time in ms. */
function timedGet(agent: Agent, port: number, urlPath: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: urlPath, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(performance.now() - started));
    });
    req.on('error', reject);
    req.end();
  });
}

const p99 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.ceil(values.length * 0.99) - 1] ?? 0;

describe('slow readers against a server process', () => {
  let server: ServerProcess;
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'coffer-slow-readers-'));
    server = await startServer(
      serverEnv(dir, await freshDatabaseUrl(), ADMIN_TOKEN, {
        LISTENERS: 'api',
        WORKERS: 'false',
        WRITE_TIMEOUT_MS: String(WRITE_TIMEOUT_MS),
      }),
    );
    await server.waitFor(/Coffer is running/);
  });
  after(async () => {
    server?.kill();
    await server?.exited;
    await rm(dir, { recursive: true, force: true });
  });

  test(`${CONNECTIONS} connections pipelining ${PIPELINED} OpenAPI documents and never reading: RSS and /health stay flat, every connection is closed`, async (t) => {
    const port = server.ports.api;
    const pid = server.proc.pid as number;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    // Warm up: the document is built on its first request.
    for (let i = 0; i < 5; i++) {
      await timedGet(agent, port, '/api/v1/openapi.json');
      await timedGet(agent, port, '/health');
    }
    await sleep(500);
    const baseline = rssMb(pid);

    const started = Date.now();
    const attackers: Socket[] = [];
    const closed: Promise<void>[] = [];
    for (let i = 0; i < CONNECTIONS; i++) {
      const c = rawClient(port, false);
      c.socket.write(OPENAPI.repeat(PIPELINED));
      attackers.push(c.socket);
      closed.push(c.closed);
    }
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 50);
    const latencies: number[] = [];
    while (Date.now() - started < WRITE_TIMEOUT_MS + 3_000) {
      latencies.push(await timedGet(agent, port, '/health'));
      await sleep(5);
    }
    clearInterval(sampler);
    // Reading again, a reset connection ends; one the server kept open reads its answers and stays open.
    for (const s of attackers) s.resume();
    await within(Promise.all(closed), 3_000);
    const stillOpen = attackers.filter((s) => !s.closed).length;
    for (const s of attackers) s.destroy();
    await sleep(1_000);
    const afterwards = rssMb(pid);
    agent.destroy();

    const figures = {
      rssBaselineMb: Math.round(baseline),
      rssPeakMb: Math.round(peak),
      rssAfterMb: Math.round(afterwards),
      healthP99Ms: Math.round(p99(latencies)),
      healthMaxMs: Math.round(Math.max(...latencies)),
      healthRequests: latencies.length,
      connectionsStillOpen: stillOpen,
    };
    t.diagnostic(JSON.stringify(figures));
    assert.ok(peak - baseline < 100, `RSS grew by ${Math.round(peak - baseline)} MB: ${JSON.stringify(figures)}`);
    assert.ok(figures.healthP99Ms < 500, `/health p99 ${figures.healthP99Ms} ms: ${JSON.stringify(figures)}`);
    assert.equal(stillOpen, 0, `connections the server did not reset: ${JSON.stringify(figures)}`);
  });
});
