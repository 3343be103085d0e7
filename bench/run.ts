// Benchmarks: npm run bench -- [users|money|webhooks|checkout|tracing|lists ...] [--db pglite|postgres|both] [--duration S]
// Each server runs as its own process and is driven by autocannon (50 connections) from this
// process; server, database and load generator share the machine. Prints a markdown table per
// database, writes the raw figures to bench/results/<time>.json and prints that path. PostgreSQL
// runs use the server in DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) with
// a fresh database.
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import {
  analyzeDatabase,
  approvedWallets,
  BareBeside,
  dropDatabases,
  freshDatabase,
  fundWallets,
  json,
  load,
  machine,
  merchant,
  PG_SERVER,
  RAW_TRANSFER,
  settled,
  startBare,
  startCoffer,
  table,
  TAIL,
  verifyLedger,
  writeResults,
  type Auth,
  type CofferServer,
  type LoadResult,
} from './lib.ts';
import { startDiskProbe, stopDiskProbe } from './disk-stalls.ts';
import { listsScenario } from './lists.ts';
import { rawBeside, rawTransferRate } from './raw-transfer.ts';
import {
  type ApiRequest,
  authorize,
  cancelIntent,
  cancelPayment,
  cannon,
  capture,
  checkoutFlow,
  createIntent,
  cycle,
  deposit,
  directPayment,
  each,
  refund,
  rotate,
  take,
  type Wallet,
  withdraw,
} from './requests.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    db: { type: 'string', default: 'both' },
    duration: { type: 'string', default: '10' },
    root: { type: 'string' },
  },
});
/** `--root <dir>`: the tracing scenario's "tracing off" rows also run the Coffer of another checkout (a version without the tracing calls, say). */
const otherRoot = values.root;
const durationS = Number(values.duration);
const scenarios = positionals.length > 0 ? positionals : ['users'];
const dbs = values.db === 'both' ? ['pglite', 'postgres'] : [values.db!];

async function bare(): Promise<LoadResult> {
  const server = await startBare();
  try {
    return await load('bare Fastify route', { url: `${server.url}/`, durationS });
  } finally {
    await server.stop();
  }
}

async function usersScenario(db: string): Promise<LoadResult[]> {
  const results: LoadResult[] = [await bare()];
  const databaseUrl = db === 'postgres' ? await freshDatabase(PG_SERVER, 'coffer_bench') : undefined;
  let floorQuery: { text: string; values: string[] } | undefined;
  const beside = await BareBeside.start();
  try {
    for (const logLevel of ['info', 'warn']) {
      const coffer = await startCoffer({ databaseUrl, env: { LOG_LEVEL: logLevel } });
      try {
        const auth = await merchant(coffer);
        let userId = '';
        const userIds: string[] = [];
        for (let i = 0; i < 200; i++) {
          const u = await json(`${coffer.url}/api/v1/users`, {
            method: 'POST',
            headers: auth,
            body: JSON.stringify({
              data: {
                type: 'User',
                attributes: {
                  phoneNumber: `+1555${logLevel === 'info' ? 1 : 2}${String(i).padStart(6, '0')}`,
                  firstName: 'Bench',
                },
              },
            }),
          });
          userId = u.data.id;
          userIds.push(userId);
        }
        // The table's statistics, as a running server's autovacuum keeps them (analyzeDatabase):
        // every user the rows read is made. Without them the page of ten cost PostgreSQL about
        // three times as much (planned for a table never analyzed).
        if (databaseUrl) await analyzeDatabase(databaseUrl);
        const suffix = logLevel === 'info' ? '' : ', LOG_LEVEL=warn';
        // Each request asks for the next of the 200 users.
        results.push(
          await beside.around(() =>
            load(`GET /api/v1/users/{id}${suffix}`, {
              url: `${coffer.url}/api/v1/users/${userId}`,
              headers: auth,
              serverPid: coffer.proc.pid,
              durationS,
              requests: rotate(userIds.map((id) => `/api/v1/users/${id}`)),
            }),
          ),
        );
        results.push(
          await beside.around(() =>
            load(`GET /api/v1/users (10 per page)${suffix}`, {
              url: `${coffer.url}/api/v1/users?page[limit]=10`,
              headers: auth,
              serverPid: coffer.proc.pid,
              durationS,
            }),
          ),
        );
        floorQuery = {
          text: 'select id, disabled, first_name, last_name, email, phone_number, created_at, updated_at from users where client_id = $1 and id = $2',
          values: [auth['client-id'], userId],
        };
      } finally {
        await coffer.stop();
      }
    }
    if (databaseUrl && floorQuery) {
      const floor = await startBare({ databaseUrl, ...floorQuery });
      try {
        results.push(
          await beside.around(() =>
            load('floor: bare route + one prepared pg read of the same row', { url: `${floor.url}/`, durationS }),
          ),
        );
      } finally {
        await floor.stop();
      }
    }
  } finally {
    await beside.stop();
  }
  return results;
}

/**
 * Runs each money row beside the raw transfer (rawBeside) on PostgreSQL; on PGlite, as it is.
 * Either way the next row starts once no payment of the merchant is Processing (`settled`).
 */
function rawBesideOf(
  databaseUrl: string | undefined,
  coffer: CofferServer,
  auth: Auth,
): (row: () => Promise<LoadResult>) => Promise<LoadResult> {
  const quiet = () => settled(coffer, auth);
  const beside = databaseUrl ? rawBeside(databaseUrl, quiet) : undefined;
  return async (row) => {
    if (!beside) {
      const r = await row();
      await quiet();
      return r;
    }
    const [r, raw] = await beside.around(row);
    return { ...r, raw };
  };
}

/** The yardstick for money movements on PostgreSQL (see raw-transfer.ts). */
async function rawTransfer(databaseUrl: string): Promise<LoadResult> {
  const rate = await rawTransferRate(databaseUrl, { durationS });
  return { name: RAW_TRANSFER, rps: rate, p50: 0, p99: 0, requests: rate * durationS, non2xx: 0, errors: 0 };
}

/**
 * Money: deposits (each with its own idempotency key, spread over 50 wallets, and all on one
 * wallet for the hot-row case) and balance reads, beside the bare route and, on PostgreSQL, a
 * raw pg transfer transaction on 8 connections.
 */
async function moneyScenario(db: string): Promise<LoadResult[]> {
  const databaseUrl = db === 'postgres' ? await freshDatabase(PG_SERVER, 'coffer_bench') : undefined;
  const results: LoadResult[] = [await bare(), ...(databaseUrl ? [await rawTransfer(databaseUrl)] : [])];
  const coffer = await startCoffer({ databaseUrl });
  try {
    const auth = await merchant(coffer, { maxOneTimeDeposit: 100_000_000 });
    const wallets = await approvedWallets(coffer, auth, 50);
    const besideRaw = rawBesideOf(databaseUrl, coffer, auth);
    const nextWallet = cycle(wallets);
    results.push(
      await besideRaw(() =>
        load('POST deposit (50 wallets)', {
          url: coffer.url,
          headers: auth,
          serverPid: coffer.proc.pid,
          durationS,
          requests: cannon(() => deposit(nextWallet())),
        }),
      ),
    );
    results.push(
      await besideRaw(() =>
        load('POST deposit (one wallet: hot row)', {
          url: coffer.url,
          headers: auth,
          serverPid: coffer.proc.pid,
          durationS,
          requests: cannon(() => deposit(wallets[0]!)),
        }),
      ),
    );
    const beside = await BareBeside.start();
    try {
      results.push(
        await beside.around(() =>
          load('GET wallet balance (50 wallets)', {
            url: `${coffer.url}/api/v1/wallets/${wallets[1]!.walletId}/balance`,
            headers: auth,
            serverPid: coffer.proc.pid,
            durationS,
            requests: rotate(wallets.map((w) => `/api/v1/wallets/${w.walletId}/balance`)),
          }),
        ),
      );
    } finally {
      await beside.stop();
    }
    // Money out of 50 other wallets once they hold cleared funds: withdrawals to the linked
    // account, and direct payments (POST /payments) from the wallet's balance. Other wallets,
    // because clearing is the sandbox's clear-pending, which clears every pending deposit of a
    // wallet one by one in one request: the deposit rows leave tens of thousands on the first
    // wallet, more than that request finishes within the server's 90-second request timeout.
    const spenders = await approvedWallets(coffer, auth, 50, 50);
    await fundWallets(coffer, auth, spenders, 50_000_000);
    const fromWallet = (label: string, request: (w: Wallet) => ApiRequest) => {
      const next = cycle(spenders);
      return besideRaw(() =>
        load(label, {
          url: coffer.url,
          headers: auth,
          serverPid: coffer.proc.pid,
          durationS,
          requests: cannon(() => request(next())),
        }),
      );
    };
    results.push(await fromWallet('POST withdraw (50 wallets)', (w) => withdraw(w)));
    results.push(await fromWallet('POST /payments (50 wallets)', (w) => directPayment(w)));
    const ledger = await verifyLedger(coffer);
    if (!ledger.sound) throw new Error(`ledger not sound after the run: ${JSON.stringify(ledger.violations)}`);
  } finally {
    await coffer.stop();
  }
  return results;
}

/**
 * Checkout: the merchant's whole flow (create a payment intent, authorize it, capture the
 * payment) from 50 connections over 50 funded wallets, then each step alone on its own batch,
 * so that authorize's latency is its own. No card processor: bank rails, manual capture.
 */
async function checkoutScenario(db: string): Promise<LoadResult[]> {
  const databaseUrl = db === 'postgres' ? await freshDatabase(PG_SERVER, 'coffer_bench') : undefined;
  const results: LoadResult[] = [await bare(), ...(databaseUrl ? [await rawTransfer(databaseUrl)] : [])];
  const coffer = await startCoffer({ databaseUrl });
  try {
    const auth = await merchant(coffer, { maxOneTimeDeposit: 100_000_000 });
    const wallets = await approvedWallets(coffer, auth, 50);
    await fundWallets(coffer, auth, wallets, 50_000_000);
    const fixture = { coffer, auth };
    const nextWallet = cycle(wallets);
    // Each row beside the raw transfer; every row after the flow starts once the payments the
    // row before captured have settled.
    const besideRaw = rawBesideOf(databaseUrl, coffer, auth);
    const whole = await besideRaw(() =>
      load('checkout flow: create intent → authorize → capture', {
        url: coffer.url,
        headers: auth,
        serverPid: coffer.proc.pid,
        durationS,
        requests: checkoutFlow(nextWallet),
      }),
    );
    results.push(whole, {
      ...whole,
      name: '= whole flows per second',
      rps: Math.round(whole.rps / 3),
      p50: 0,
      p99: 0,
      cpu: undefined,
    });

    // Each step alone: a batch of intents, then authorize each (at 50 connections, then at 10,
    // where the server is not saturated), then capture what was authorized at 50. Each step's
    // request consumes its intent or payment, so these rows run a fixed number of requests; each
    // step first runs a warm-up batch of its own, not counted, like the timed rows' 2 s of the same
    // load: a row's first requests, sent at once on new connections to code not yet compiled, would
    // be most of its 1% slowest. 1,000 per second of the duration, so a row's p99 is more than a
    // handful of responses that one garbage collection can catch.
    const n = 1000 * durationS;
    const warm = 2000;
    const intents: string[] = [];
    const newIntent = () => createIntent(nextWallet());
    const intentId = (answer: { data: { id: string } }) => answer.data.id;
    results.push(
      await besideRaw(() =>
        each(`POST /payment-intents (${2 * n + warm})`, fixture, {
          count: 2 * n + warm,
          warmup: warm,
          next: newIntent,
          keep: { pick: intentId, into: intents, warmInto: intents },
        }),
      ),
    );
    // A row's warm-up batch goes first in the same autocannon run, on the same connections
    // (warmupAmount): as a run of its own, it left the counted requests to new connections.
    const nextIntent = take(intents, 'intents');
    /** Authorizes `count` intents (after `warmup` more, not counted); the payments go into `into`, the warm-up's into `warmInto`. */
    const authorizeEach = (count: number, connections: number, into: string[], warmup: number, warmInto: string[]) =>
      each(`POST /payment-intents/{id}/authorize (${count}, ${connections} connections)`, fixture, {
        count,
        warmup,
        connections,
        next: () => authorize(nextIntent()),
        keep: { pick: (answer) => answer.included[0].id, into, warmInto },
      });
    /** One POST per id, each built by `request`, after one per `warmup` id, not counted. */
    const postEach = (label: string, warmup: string[], measured: string[], request: (id: string) => ApiRequest) => {
      const next = take([...warmup, ...measured], label);
      return each(`${label} (${measured.length})`, fixture, {
        count: measured.length,
        warmup: warmup.length,
        next: () => request(next()),
      });
    };
    const warmPayments: string[] = [];
    const payments: string[] = [];
    // The tables' statistics as a running server's autovacuum keeps them (analyzeDatabase).
    if (databaseUrl) await analyzeDatabase(databaseUrl);
    const uncaptured: string[] = [];
    const warmUncaptured: string[] = [];
    // At 10 connections too, a warm-up batch of its own goes first: its payments are the
    // payment cancel row's warm-up.
    results.push(
      await besideRaw(() => authorizeEach(n, 50, payments, warm, warmPayments)),
      await besideRaw(() => authorizeEach(n, 10, uncaptured, warm, warmUncaptured)),
    );
    if (databaseUrl) await analyzeDatabase(databaseUrl);
    results.push(
      await besideRaw(() => postEach('POST /payments/{id}/capture', warmPayments, payments, (id) => capture(id))),
    );
    // The rest of a payment's life, each on its own batch: refund what was captured, cancel the
    // payments authorized at 10 connections, and cancel intents never authorized.
    results.push(
      await besideRaw(() => postEach('POST /payments/{id}/refund', warmPayments, payments, (id) => refund(id))),
    );
    results.push(
      await besideRaw(() => postEach('POST /payments/{id}/cancel', warmUncaptured, uncaptured, cancelPayment)),
    );
    const open: string[] = [];
    await each(`POST /payment-intents (${n}, to cancel)`, fixture, {
      count: n,
      warmup: warm,
      next: newIntent,
      keep: { pick: intentId, into: open, warmInto: open },
    });
    results.push(
      await besideRaw(() =>
        postEach('POST /payment-intents/{id}/cancel', open.slice(0, warm), open.slice(warm), cancelIntent),
      ),
    );
    const ledger = await verifyLedger(coffer);
    if (!ledger.sound) throw new Error(`ledger not sound after the run: ${JSON.stringify(ledger.violations)}`);
  } finally {
    await coffer.stop();
  }
  return results;
}

/**
 * Webhook delivery: N events are created with the workers off (that rate is reported too),
 * then the server restarts with them on and delivers the backlog to a receiver in this
 * process; the rate is measured from the first arrival to the last.
 */
async function webhooksScenario(db: string): Promise<LoadResult[]> {
  const n = 5000;
  const databaseUrl = db === 'postgres' ? await freshDatabase(PG_SERVER, 'coffer_bench') : undefined;
  let received = 0;
  let first = 0;
  let last = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      last = performance.now();
      if (received === 1) first = last;
      res.end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`;
  const results: LoadResult[] = [];
  try {
    const paused = await startCoffer({ databaseUrl, env: { WORKERS: 'false' } });
    let dataDir = paused.dataDir;
    try {
      const auth = await merchant(paused);
      const hook = await json(`${paused.url}/api/v1/webhooks`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({
          data: { type: 'Webhook', attributes: { name: 'bench', url: receiverUrl, topics: ['*'] } },
        }),
      });
      const created = await load(`create events (POST /webhooks/{id}/test, ${n} requests)`, {
        url: `${paused.url}/api/v1/webhooks/${hook.data.id}/test`,
        method: 'POST',
        headers: auth,
        amount: n,
      });
      results.push(created);
      dataDir = paused.dataDir;
    } finally {
      await paused.stop();
    }
    const running = await startCoffer({ databaseUrl, dataDir });
    try {
      const deadline = Date.now() + 300_000;
      while (received < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const seconds = (last - first) / 1000;
      results.push({
        name: `deliver the ${n}-event backlog to a local receiver`,
        rps: Math.round((received - 1) / seconds),
        p50: 0,
        p99: 0,
        requests: received,
        non2xx: n - received,
        errors: 0,
      });
    } finally {
      await running.stop();
    }
  } finally {
    receiver.close();
  }
  return results;
}

/**
 * Tracing: what OpenTelemetry costs. GET user and deposits (50 wallets) on one database, served
 * in turn by a server with tracing off and one exporting every span to an OTLP receiver in this
 * process (which answers 200 and counts what it gets), twice over: the spread between the two
 * "off" rows is the run's noise. With `--root <dir>`, a third server per round runs another
 * checkout's Coffer with tracing off. The second round runs the servers in reverse order.
 */
async function tracingScenario(db: string): Promise<LoadResult[]> {
  const databaseUrl = db === 'postgres' ? await freshDatabase(PG_SERVER, 'coffer_bench') : undefined;
  const results: LoadResult[] = [await bare()];
  let exports = 0;
  const receiver = createServer((req, res) => {
    exports++;
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const otlp = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
  const servers: { label: string; env: Record<string, string>; root?: string }[] = [
    { label: 'tracing off', env: {} },
    { label: 'tracing on', env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp } },
    ...(otherRoot ? [{ label: `tracing off, ${otherRoot}`, env: {}, root: otherRoot }] : []),
  ];
  try {
    // The data every server works on is made once, by the first.
    const setup = await startCoffer({ databaseUrl });
    let auth: Awaited<ReturnType<typeof merchant>>;
    let wallets: Awaited<ReturnType<typeof approvedWallets>>;
    let userIds: string[];
    try {
      auth = await merchant(setup, { maxOneTimeDeposit: 100_000_000 });
      wallets = await approvedWallets(setup, auth, 50);
      userIds = [];
      for (let i = 0; i < 200; i++) {
        const u = await json(`${setup.url}/api/v1/users`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({
            data: {
              type: 'User',
              attributes: { phoneNumber: `+1556${String(i).padStart(7, '0')}`, firstName: 'Bench' },
            },
          }),
        });
        userIds.push(u.data.id);
      }
    } finally {
      await setup.stop();
    }
    // The second round runs the servers in reverse order, so that a drift over the run (a warmer
    // cache, a growing ledger) does not favour whichever server comes last.
    for (const round of [1, 2]) {
      for (const s of round === 1 ? servers : [...servers].reverse()) {
        const coffer = await startCoffer({
          databaseUrl,
          env: s.env,
          root: s.root,
          dataDir: databaseUrl ? undefined : setup.dataDir,
        });
        try {
          const suffix = `, ${s.label} (round ${round})`;
          results.push(
            await load(`GET /api/v1/users/{id}${suffix}`, {
              url: coffer.url,
              headers: auth,
              serverPid: coffer.proc.pid,
              durationS,
              requests: rotate(userIds.map((id) => `/api/v1/users/${id}`)),
            }),
          );
          const nextWallet = cycle(wallets);
          results.push(
            await load(`POST deposit (50 wallets)${suffix}`, {
              url: coffer.url,
              headers: auth,
              serverPid: coffer.proc.pid,
              durationS,
              requests: cannon(() => deposit(nextWallet())),
            }),
          );
        } finally {
          await coffer.stop();
        }
      }
    }
    process.stdout.write(`OTLP export requests received: ${exports}\n`);
  } finally {
    receiver.close();
  }
  return results;
}

const SCENARIOS: Record<string, (db: string) => Promise<LoadResult[]>> = {
  users: usersScenario,
  webhooks: webhooksScenario,
  money: moneyScenario,
  checkout: checkoutScenario,
  tracing: tracingScenario,
  lists: (db) => listsScenario(db, { durationS, bare }),
};
const report: Record<string, Record<string, LoadResult[]>> = {};
for (const db of dbs) {
  // With BENCH_TAIL, the disk's stalls beside the rows, on the filesystem the database's
  // commits wait on. The probe's fsyncs load the disk too, so the tables' runs go without it.
  stopDiskProbe();
  if (TAIL) await startDiskProbe(db === 'postgres' ? PG_SERVER : undefined);
  for (const s of scenarios) {
    const run = SCENARIOS[s];
    if (!run) throw new Error(`unknown scenario ${s}; known: ${Object.keys(SCENARIOS).join(', ')}`);
    const results = await run(db);
    (report[db] ??= {})[s] = results;
    const reference = s === 'webhooks' ? undefined : results[0];
    process.stdout.write(
      `\n### ${s} on ${db === 'postgres' ? 'PostgreSQL 15' : 'PGlite'} (${durationS} s each, 50 connections)\n\n${table(results, reference)}\n`,
    );
  }
}
process.stdout.write(`\nMachine: ${machine()}\n`);
stopDiskProbe();
await dropDatabases();
await writeResults(new Date().toISOString().slice(0, 19).replace(/:/g, ''), { machine: machine(), durationS, report });
