// Profiling one checkout step (a developer's tool, not a benchmark):
//   node --import tsx bench/profile-checkout.ts <intent|authorize|capture|deposit|refund|cancel-payment|cancel-intent|withdraw|direct|flow> [seconds]
// (`flow`: the benchmark's checkout flow, each connection creating, authorizing and capturing in turn)
// Needs a PostgreSQL server in PROFILE_PG (default postgres://postgres@127.0.0.1:5432/postgres);
// with pg_stat_statements preloaded it also prints the statements per request. Sets up wallets and the steps before the one
// measured, restarts the server with --cpu-prof (PROFILE_NODE_ARGS replaces that; both come after
// the flags of `npm start`, and a V8 flag given twice takes the later value), runs the
// step, and prints the statements it sent per request; the CPU profile lands in /tmp/prof.
// PROFILE_KEEP=1 keeps the database afterwards (for EXPLAIN on its data). Every step
// first runs PROFILE_WARM (2,000) requests of its own, not measured, then an ANALYZE; PROFILE_WALLETS (50,
// as the benchmark) sets how many wallets the steps spread over. The figures include
// the CPU time per request of the server and of PostgreSQL. PROFILE_CONNECTIONS (50) sets the load;
// PROFILE_PERF=<file> records `perf record -a -g` of the whole machine during the measured step.
// PROFILE_NO_RESTART=1 measures on the server that set up the step (what it remembers, such as
// which wallet each intent spends from, stays; its CPU profile then covers the set-up too), and
// PROFILE_SQL runs statements on the database just before the measured step (to try a schema
// change: one run with it, one without). An fsync probe (disk-stalls.ts) runs beside it: the
// step's figures include the disk's stalls during it, and with BENCH_TAIL when each came.
import { spawn } from 'node:child_process';
import pg from 'pg';
import { startDiskProbe } from './disk-stalls.ts';
import {
  analyzeDatabase,
  approvedWallets,
  fundWallets,
  load,
  merchant,
  profileEnv,
  runOn,
  startCoffer,
} from './lib.ts';

const step = process.argv[2] ?? 'intent';
const seconds = Number(process.argv[3] ?? 10);
const server = process.env.PROFILE_PG ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const name = `coffer_prof_${Date.now()}`;
const admin = new pg.Client({ connectionString: server });
await admin.connect();
await startDiskProbe(server); // the disk's stalls beside the step's figures
await admin.query(`create database ${name}`);
const u = new URL(server); // the server's URL with the new database's name (a ?host=/socket/dir stays)
u.pathname = `/${name}`;
const databaseUrl = u.toString();
const env = { LOG_LEVEL: 'warn', ...profileEnv() };

let coffer = await startCoffer({ databaseUrl, env });
const auth = await merchant(coffer, { maxOneTimeDeposit: 100_000_000 });
const wallets = await approvedWallets(coffer, auth, Number(process.env.PROFILE_WALLETS ?? 50)); // 50: as the benchmark
await fundWallets(coffer, auth, wallets, 50_000_000);

let k = 0;
const intentReq = {
  method: 'POST',
  path: '/api/v1/payment-intents',
  setupRequest: (r: Record<string, unknown>) => ({
    ...r,
    body: JSON.stringify({
      data: {
        type: 'CreatePaymentIntent',
        attributes: { amount: 100, walletId: wallets[k++ % wallets.length]!.walletId },
      },
    }),
  }),
};
const depositReq = {
  method: 'POST',
  setupRequest: (r: Record<string, unknown>) => {
    const w = wallets[k++ % wallets.length]!;
    return {
      ...r,
      path: `/api/v1/wallets/${w.walletId}/transactions`,
      body: JSON.stringify({
        data: {
          type: 'OneTimeDeposit',
          attributes: { amount: 1000, linkedAccountId: w.accountId, idempotencyKey: `p-${k}-${Date.now()}` },
        },
      }),
    };
  },
};
/** Money out of a funded wallet, as the benchmark sends it: a withdrawal, or a direct payment (POST /payments). */
const fromWalletReq = (
  type: string,
  path: (walletId: string) => string,
  extra: (walletId: string) => Record<string, unknown>,
) => ({
  method: 'POST',
  setupRequest: (r: Record<string, unknown>) => {
    const w = wallets[k++ % wallets.length]!;
    return {
      ...r,
      path: path(w.walletId),
      body: JSON.stringify({
        data: { type, attributes: { amount: 100, ...extra(w.walletId), idempotencyKey: `p-${k}-${Date.now()}` } },
      }),
    };
  },
});
const withdrawReq = fromWalletReq(
  'Withdraw',
  (id) => `/api/v1/wallets/${id}/withdraw`,
  () => ({}),
);
const directReq = fromWalletReq(
  'CreatePayment',
  () => '/api/v1/payments',
  (walletId) => ({ walletId }),
);
// Every step first runs PROFILE_WARM requests of its own, not measured, before the ANALYZE below:
// statistics taken while a table is still tiny make PostgreSQL plan a sequential scan for its
// lookups (the idempotency key's, in every money write), and each connection keeps that plan
// while the table grows until the next ANALYZE (none, with autovacuum off): about 0.9 ms per
// deposit after 15 s, most of what the step then measured.
const warm = Number(process.env.PROFILE_WARM ?? 2000);
const n = 400 * seconds + warm;
const intents: string[] = [];
const payments: string[] = [];
type FlowCtx = { intentId?: string; paymentId?: string };
/** An authorize (or capture) of the id `idOf` gives: the next set-up one, or the flow's own. */
const authorizeOf = (idOf: (ctx: FlowCtx) => string | undefined) => ({
  method: 'POST',
  setupRequest: (r: Record<string, unknown>, ctx: FlowCtx) => {
    const id = idOf(ctx);
    return {
      ...r,
      path: `/api/v1/payment-intents/${id}/authorize`,
      body: JSON.stringify({
        data: { type: 'AuthorizePaymentIntent', attributes: { amount: 100, idempotencyKey: `${id}-a` } },
      }),
    };
  },
});
const captureOf = (idOf: (ctx: FlowCtx) => string | undefined) => ({
  method: 'POST',
  setupRequest: (r: Record<string, unknown>, ctx: FlowCtx) => ({
    ...r,
    path: `/api/v1/payments/${idOf(ctx)}/capture`,
    body: JSON.stringify({ data: { type: 'CapturePayment', attributes: { amount: 100 } } }),
  }),
});
let i = 0;
const authReq = authorizeOf(() => intents[i++]);
let j = 0;
const capReq = captureOf(() => payments[j++]);
let r2 = 0;
const refundReq = {
  method: 'POST',
  setupRequest: (r: Record<string, unknown>) => {
    const id = payments[r2++];
    return {
      ...r,
      path: `/api/v1/payments/${id}/refund`,
      body: JSON.stringify({ data: { type: 'Refund', attributes: { amount: 100, idempotencyKey: `${id}-r` } } }),
    };
  },
};
let c2 = 0;
const cancelPaymentReq = {
  method: 'POST',
  setupRequest: (r: Record<string, unknown>) => ({ ...r, path: `/api/v1/payments/${payments[c2++]}/cancel` }),
};
let c3 = 0;
const cancelIntentReq = {
  method: 'POST',
  setupRequest: (r: Record<string, unknown>) => ({ ...r, path: `/api/v1/payment-intents/${intents[c3++]}/cancel` }),
};
const flowReqs = [
  { ...intentReq, onResponse: (_s: number, b: string, ctx: FlowCtx) => void (ctx.intentId = JSON.parse(b).data?.id) },
  {
    ...authorizeOf((ctx) => ctx.intentId),
    onResponse: (_s: number, b: string, ctx: FlowCtx) => void (ctx.paymentId = JSON.parse(b).included?.[0]?.id),
  },
  captureOf((ctx) => ctx.paymentId),
];
if (!['intent', 'deposit', 'withdraw', 'direct', 'flow'].includes(step)) {
  await load('intents', {
    url: coffer.url,
    headers: auth,
    amount: n,
    requests: [
      { ...intentReq, onResponse: (_s: number, b: string) => void intents.push(JSON.parse(b).data.id) },
    ] as never,
  });
}
if (step === 'capture' || step === 'refund' || step === 'cancel-payment') {
  await load('authorize', {
    url: coffer.url,
    headers: auth,
    amount: n,
    requests: [
      { ...authReq, onResponse: (_s: number, b: string) => void payments.push(JSON.parse(b).included[0].id) },
    ] as never,
  });
}
if (step === 'refund') {
  await load('capture', { url: coffer.url, headers: auth, amount: n, requests: [capReq] as never });
}

// The measured step runs on a fresh server process, so its profile holds only the step.
const dataDir = coffer.dataDir;
if (!process.env.PROFILE_NO_RESTART) {
  await coffer.stop();
  coffer = await startCoffer({
    databaseUrl,
    dataDir,
    env,
    nodeArgs: process.env.PROFILE_NODE_ARGS?.split(' ').filter(Boolean) ?? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'],
  });
}
const requests = {
  intent: [intentReq],
  authorize: [authReq],
  capture: [capReq],
  deposit: [depositReq],
  refund: [refundReq],
  'cancel-payment': [cancelPaymentReq],
  'cancel-intent': [cancelIntentReq],
  withdraw: [withdrawReq],
  direct: [directReq],
  flow: flowReqs,
}[step]!;
if (warm)
  await load(`${step} (warm-up)`, { url: coffer.url, headers: auth, amount: warm, requests: requests as never });
// The tables' statistics current, as the benchmark has them (analyzeDatabase): PostgreSQL's
// autovacuum may be off (it is on this project's benchmark machine), and plans made for the
// near-empty tables of the set-up (a sequential scan of idempotency_keys) would be kept.
await analyzeDatabase(databaseUrl);
if (process.env.PROFILE_SQL) await runOn(databaseUrl, process.env.PROFILE_SQL);
const statements = await admin.query('select pg_stat_statements_reset()').then(
  () => true,
  () => false,
);
const timed = ['intent', 'deposit', 'withdraw', 'direct', 'flow'].includes(step);
const perf = process.env.PROFILE_PERF
  ? spawn('perf', ['record', '-a', '-g', '-F', '999', '-o', process.env.PROFILE_PERF], { stdio: 'ignore' })
  : undefined;
const r = await load(step, {
  url: coffer.url,
  headers: auth,
  serverPid: coffer.proc.pid,
  connections: Number(process.env.PROFILE_CONNECTIONS ?? 50),
  ...(timed ? { durationS: seconds } : { amount: n - warm }),
  requests: requests as never,
});
if (perf) {
  perf.kill('SIGINT');
  await new Promise((done) => perf.on('exit', done));
}
console.log(r);
const stats = !statements
  ? { rows: [] }
  : await admin.query(
      `select calls, round(total_exec_time::numeric, 1) as ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 140) as q
   from pg_stat_statements s join pg_database d on d.oid = s.dbid where d.datname = $1 order by calls desc, total_exec_time desc limit 40`,
      [name],
    );
if (statements) console.log('per request | total ms | statement');
for (const s of stats.rows)
  console.log(String((s.calls / r.requests).toFixed(2)).padStart(6), String(s.ms).padStart(9), s.q);
await coffer.stop();
if (!process.env.PROFILE_KEEP) await admin.query(`drop database ${name} with (force)`);
await admin.end();
