// One campaign: PostgreSQL (a throwaway cluster the campaign owns, or a fresh database on a
// given server), PgBouncer in front of it (or not), a fault proxy in front of that, Coffer
// processes, webhook receivers, clients and faults for the given time; then the faults stop,
// the work drains, and the checker runs.
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { postgresBin, startCluster, type Cluster } from '../src/test/cluster.ts';
import { startPgBouncer, type Bouncer } from '../src/test/pgbouncer.ts';
import { serverEnv } from '../src/test/process.ts';
import { clientFor, type Merchant, type Upstreams } from './api.ts';
import { check, slice, type Anomaly } from './checker.ts';
import { ADMIN_TOKEN, CofferProcess } from './coffer.ts';
import { loadFacts } from './facts.ts';
import { FaultInjector, restart } from './faults.ts';
import { History, readHistory } from './history.ts';
import { FaultProxy } from './proxy.ts';
import { ChaosReceiver } from './receivers.ts';
import { Rng } from './rng.ts';
import { ChaosClient } from './workload.ts';

export interface CampaignOptions {
  minutes: number;
  seed: number;
  processes: number;
  clients: number;
  /** A PostgreSQL server to make the campaign's database on, when not running its own cluster. */
  serverUrl?: string;
  /** Run a throwaway cluster (and restart it as a fault). */
  ownPostgres: boolean;
  /** Coffer reaches PostgreSQL through the fault proxy and then PgBouncer (transaction mode), or through the proxy alone. */
  pooler: 'pgbouncer' | 'none';
  outDir: string;
  log: (line: string) => void;
}

export interface CampaignResult {
  seed: number;
  historyFile: string;
  operations: Record<string, { total: number; ok: number; refused: number; unanswered: number }>;
  faults: Record<string, number>;
  /** COMMITs the proxy cut during db-commit-loss faults: after PostgreSQL got them, or before. */
  commitsCut: { delivered: number; undelivered: number };
  hooks: number;
  events: number;
  anomalies: Anomaly[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function sql(url: string, text: string): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(text);
  } finally {
    await c.end();
  }
}

async function adminJson(
  base: string,
  method: string,
  p: string,
  body?: unknown,
  headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` },
) {
  const res = await fetch(`${base}${p}`, {
    method,
    headers: { 'content-type': 'application/vnd.api+json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
  return JSON.parse(text);
}

export async function runCampaign(o: CampaignOptions): Promise<CampaignResult> {
  const stamp = new Date().toISOString().replace(/[:.]/g, '').slice(0, 15);
  const dir = path.join(o.outDir, `${stamp}-seed${o.seed}`);
  await mkdir(path.join(dir, 'logs'), { recursive: true });
  const historyFile = path.join(dir, 'history.jsonl');
  const history = new History(historyFile);
  const rng = new Rng(o.seed);
  const cleanup: (() => Promise<void>)[] = [];
  try {
    // PostgreSQL and the campaign's database.
    let cluster: Cluster | undefined;
    let serverUrl = o.serverUrl;
    if (o.ownPostgres) {
      const bin = postgresBin();
      if (!bin) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql: pass --postgres shared');
      cluster = await startCluster(bin);
      cleanup.push(() => cluster!.destroy());
      serverUrl = cluster.url;
    }
    if (!serverUrl) throw new Error('no PostgreSQL: set DATABASE_URL or use a throwaway cluster');
    const dbName = `coffer_chaos_${stamp.toLowerCase().replace(/[^a-z0-9]/g, '')}`;
    await sql(serverUrl, `create database ${dbName}`);
    if (!cluster)
      cleanup.push(() => sql(serverUrl!, `drop database if exists ${dbName} with (force)`).then(() => undefined));
    const direct = new URL(serverUrl);
    direct.pathname = `/${dbName}`;
    // PgBouncer retries a failed server login every second (not 15), so that a PostgreSQL
    // restart costs its clients seconds, and gives up on a client waiting 30 s for a server.
    let bouncer: Bouncer | undefined;
    if (o.pooler === 'pgbouncer') {
      bouncer = await startPgBouncer(serverUrl, { server_login_retry: 1, query_wait_timeout: 30 });
      cleanup.push(async () => {
        await copyFile(bouncer!.logFile, path.join(dir, 'logs', 'pgbouncer.log')).catch(() => undefined);
        await bouncer!.stop();
      });
    }
    const proxy = new FaultProxy(
      bouncer
        ? { host: '127.0.0.1', port: bouncer.port }
        : { host: direct.hostname, port: Number(direct.port || 5432) },
      (() => {
        const r = rng.fork();
        return () => r.next();
      })(),
    );
    await proxy.start();
    cleanup.push(() => proxy.close());
    const viaProxy = new URL(direct);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    o.log(
      `postgres: ${cluster ? `throwaway cluster on port ${cluster.port}` : 'shared server'}, database ${dbName}, ${bouncer ? `PgBouncer on ${bouncer.port}, ` : ''}fault proxy on ${proxy.port}`,
    );

    // Webhook receivers, then the Coffer processes.
    const receivers = ['wallet-a', 'wallet-b', 'card-a', 'card-b', 'network-a'].map(
      (n) => new ChaosReceiver(n, history),
    );
    for (const r of receivers) await r.start();
    cleanup.push(async () => {
      for (const r of receivers) await r.close();
    });
    // The test servers' environment (src/test/process.ts), with work shortened to fit the campaign.
    const env = {
      ...(serverEnv(path.join(dir, 'data'), viaProxy.toString(), ADMIN_TOKEN) as Record<string, string>),
      DATABASE_POOL_SIZE: '6',
      // Behind PgBouncer 1.18 (transaction mode), statements go unnamed (docs/scaling.md#behind-pgbouncer).
      ...(bouncer ? { DATABASE_PREPARED_STATEMENTS: 'false' } : {}),
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_DELAYS: '1,1,2,2,3,3,5,5,5,5,5,5,5,5,5,5,5,5,5,5',
      WEBHOOK_TIMEOUT_MS: '3000',
      WEBHOOK_CONNECT_TIMEOUT_MS: '1000',
      WEBHOOK_BREAKER_COOLDOWN_MS: '2000',
      AUTHORIZATION_LEASE_MARGIN_MS: '2000',
      RATE_LIMIT_PER_MINUTE: '100000000',
      CLIENT_RATE_LIMIT_PER_MINUTE: '100000000',
      ADMIN_RATE_LIMIT_PER_MINUTE: '100000000',
    };
    const processes: CofferProcess[] = [];
    for (let i = 0; i < o.processes; i++)
      processes.push(await CofferProcess.create(`coffer${i + 1}`, env, path.join(dir, 'logs')));
    cleanup.push(async () => {
      for (const p of processes) await p.kill9();
    });
    // The first process runs the migrations; the others start together after it.
    await processes[0]!.start();
    await Promise.all(processes.slice(1).map((p) => p.start()));
    o.log(`${processes.length} Coffer processes up: ${processes.map((p) => p.url).join(' ')}`);

    // Merchants and their webhooks (before any fault).
    const admin = processes[0]!.adminUrl;
    const merchants: Record<string, Merchant> = {};
    // wallet: bank rails; card: bank rails with the card processor asked at authorize; network:
    // card rails (a single-use virtual card per payment, captured by the card network).
    const settings: Record<string, unknown> = {
      wallet: { maxOneTimeDeposit: 100_000_000 },
      card: { maxOneTimeDeposit: 100_000_000, cardProcessor: { enabled: true, latencyMs: 300 } },
      network: { maxOneTimeDeposit: 100_000_000, rails: 'card' },
    };
    for (const name of ['wallet', 'card', 'network']) {
      const c = await adminJson(admin, 'POST', '/admin/v1/clients', {
        data: { type: 'Client', attributes: { name: `Chaos ${name}`, settings: settings[name] } },
      });
      merchants[name] = { name, clientId: c.data.id, secret: c.data.attributes.secret };
      for (const r of receivers.filter((x) => x.name.startsWith(name))) {
        await adminJson(
          processes[0]!.url,
          'POST',
          '/api/v1/webhooks',
          { data: { type: 'Webhook', attributes: { name: r.name, url: r.url, topics: ['*'] } } },
          { 'client-id': c.data.id, authorization: `Bearer ${c.data.attributes.secret}` },
        );
      }
    }

    // Clients and faults.
    const upstreams: Upstreams = {
      // As a load balancer would: a process that is up, waiting a while for one when none is.
      pick: async () => {
        for (const end = Date.now() + 15_000; ; await sleep(200)) {
          const up = processes.filter((p) => p.up);
          if (up.length) return up[Math.floor(Math.random() * up.length)]!;
          if (Date.now() > end) return undefined;
        }
      },
    };
    let seq = 0;
    const coffers = Object.fromEntries(Object.values(merchants).map((m) => [m.name, clientFor(m, upstreams, history)]));
    const shared = { history, nextSeq: () => ++seq, coffers };
    const clients = Array.from({ length: o.clients }, (_, i) => new ChaosClient(i + 1, rng.fork(), shared));
    const faults = new FaultInjector(rng.fork(), { processes, proxy, receivers, postgres: cluster }, history);
    const endAt = Date.now() + o.minutes * 60_000;
    history.write({
      kind: 'note',
      at: Date.now(),
      text: 'campaign start',
      data: { seed: o.seed, minutes: o.minutes, processes: o.processes, clients: o.clients, pooler: o.pooler },
    });
    faults.start();
    const progress = setInterval(
      () =>
        o.log(
          `${Math.round((endAt - Date.now()) / 1000)} s left: ${seq} operations, faults ${JSON.stringify(faults.counts)}`,
        ),
      30_000,
    );
    await Promise.all(clients.map((c) => c.run(() => Date.now() >= endAt)));
    clearInterval(progress);
    await faults.stop();
    for (const p of processes) if (!p.up) await restart(p, history);
    history.write({ kind: 'note', at: Date.now(), text: 'faults stopped' });
    o.log(`faults stopped after ${seq} operations; draining`);

    // Nothing stuck: every process answers /health and the work drains.
    const stuck = await drain(processes, direct.toString(), o.log);
    const drainedAt = Date.now();
    for (const p of processes) {
      const t0 = Date.now();
      await p.stop(async () => {
        const r = await sql(
          direct.toString(),
          `select pid, state, wait_event_type, wait_event, left(query, 200) as query, now() - state_change as since from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`,
        ).catch((err: Error) => ({ rows: [err.message] }));
        history.write({
          kind: 'note',
          at: Date.now(),
          text: `${p.name} still running 10 s after SIGTERM`,
          data: r.rows,
        });
        o.log(`${p.name} still running 10 s after SIGTERM; database sessions: ${JSON.stringify(r.rows)}`);
      });
      if (Date.now() - t0 > 25_000) stuck.push(`${p.name} took ${Date.now() - t0} ms to shut down on SIGTERM`);
    }
    await history.close();

    // The checker.
    const facts = await loadFacts(direct.toString(), stuck, drainedAt);
    const records = readHistory(historyFile);
    const anomalies = check(records, facts);
    const operations: CampaignResult['operations'] = {};
    for (const r of records) {
      if (r.kind !== 'op') continue;
      const s = (operations[r.name] ??= { total: 0, ok: 0, refused: 0, unanswered: 0 });
      s.total++;
      if (r.status === undefined || r.status >= 500) s.unanswered++;
      else if (r.status < 300) s.ok++;
      else s.refused++;
    }
    for (const a of anomalies.slice(0, 20)) {
      o.log(`ANOMALY (seed ${o.seed}) ${a.rule}: ${a.detail}`);
      for (const r of slice(records, a)) o.log(`  ${JSON.stringify(r)}`);
    }
    return {
      seed: o.seed,
      historyFile,
      operations,
      faults: faults.counts,
      commitsCut: { ...proxy.commitsCut },
      hooks: records.filter((r) => r.kind === 'hook').length,
      events: facts.events.length,
      anomalies,
    };
  } finally {
    for (const c of cleanup.reverse()) await c().catch((err) => o.log(`cleanup: ${(err as Error).message}`));
  }
}

/** Waits for every process to answer /health and for the webhook deliveries, authorization attempts and payouts' bank pushes to finish. */
async function drain(processes: CofferProcess[], databaseUrl: string, log: (l: string) => void): Promise<string[]> {
  const stuck: string[] = [];
  for (const p of processes) {
    const res = await fetch(`${p.url}/health`, { signal: AbortSignal.timeout(10_000) }).catch((err: Error) => err);
    if (res instanceof Error || !res.ok)
      stuck.push(`${p.name} did not answer /health: ${res instanceof Error ? res.message : res.status}`);
  }
  const deadline = Date.now() + 120_000;
  // The queue the workers claim from holds a row exactly while a delivery is pending (migration
  // 0027): rows left there once none is pending would be a delivery ended without leaving it.
  let left = { deliveries: 0, queued: 0, attempts: 0, payouts: 0 };
  for (;;) {
    const r = await sql(
      databaseUrl,
      `select (select count(*) from event_deliveries where state = 'pending')::int as deliveries,
              (select count(*) from event_delivery_queue)::int as queued,
              (select count(*) from authorization_attempts where state = 'processing')::int as attempts,
              (select count(*) from counterparty_payouts where status = 'Pending')::int as payouts`,
    ).catch(() => undefined);
    if (r) left = r.rows[0];
    if (r && left.deliveries === 0 && left.queued === 0 && left.attempts === 0 && left.payouts === 0) break;
    if (Date.now() > deadline) {
      stuck.push(
        `after 120 s: ${left.deliveries} webhook deliveries pending (${left.queued} in the queue), ${left.attempts} authorization attempts open, ${left.payouts} payouts not sent to the bank`,
      );
      break;
    }
    await sleep(1_000);
  }
  log(`drained: ${JSON.stringify(left)}`);
  return stuck;
}
