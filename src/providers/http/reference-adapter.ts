// A reference adapter: the provider adapter protocol (docs/providers.md) served with the
// sandbox's deterministic behaviour, for an operator to start from and for tests. It verifies
// every request's signature, validates every body, answers a repeated Idempotency-Key with its
// first answer (a different body under a used key is 409), and signs every answer. It moves no
// money and keeps everything in memory: never point a live deployment at it.
//
//   KYC            decided `kycDecisionMs` after submission by e-mail address, as the sandbox
//                  decides (providers/kyc.ts: sandboxKycDecision); after a documents report,
//                  decided again `kycDecisionMs` later; document links point at a made-up page
//   bank linking   an account made up from the reference (and the optional details sent)
//   bank transfers pending, then `settleMs` after acceptance settled, or failed (R01) when the
//                  amount's last two digits are 04
//   card issuing   a Luhn-valid test card (BIN 400000) derived from the reference
//   card processor declines amounts whose last two digits are 02 (do_not_honor), approves others
//
// `faults` lets a test make the next matching request fail after its work is done (the answer
// lost), answer late, answer malformed or sign its answer wrongly.
import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { SandboxCardIssuer } from '../card-issuing.ts';
import { sandboxKycDecision } from '../kyc.ts';
import { OPERATIONS, validatorOf, type AnswerOf, type OperationName, type RequestOf } from './protocol.ts';

export interface ReferenceAdapterOptions {
  signingSecret: string;
  /** How long after acceptance a bank transfer settles or fails (default 1 s). */
  settleMs?: number;
  /** How long after submission a KYC application is decided (default 500 ms). */
  kycDecisionMs?: number;
}

/** Makes the next request whose path starts with `path` (and method matches, if given) misbehave, once. */
export type Fault = { path: string; method?: 'GET' | 'POST' } & (
  | { kind: 'status'; status: number }
  | { kind: 'delay'; ms: number }
  | { kind: 'malformed' }
  | { kind: 'bad-signature' }
);

/** One request as the adapter saw it. */
export interface AdapterCall {
  method: string;
  path: string;
  operation?: OperationName;
  idempotencyKey?: string;
  /** Whether its signature verified. */
  signed: boolean;
  status: number;
  /** The parsed body of a POST. */
  body?: Record<string, unknown>;
  /** A repeated key, answered with the first answer. */
  replayed: boolean;
}

interface Stored {
  fingerprint: string;
  answer: Promise<unknown>;
}

const MAX_BODY_BYTES = 1024 * 1024;

export class ReferenceAdapter {
  readonly calls: AdapterCall[] = [];
  readonly faults: Fault[] = [];
  /** The most requests that were being answered at one time (whether a caller sends them together). */
  mostAtOnce = 0;
  #inFlight = 0;
  /** What each operation did, once per key: the adapter's own records. */
  readonly applications = new Map<string, { email: string; submittedAt: number; documentsAt?: number }>();
  readonly documentLinks = new Map<string, { application: string; redirectUrl: string }>();
  /** Transfers by reference: to a linked account (accountId) or to an account by its numbers (bankAccount: a payout). */
  readonly transfers = new Map<
    string,
    {
      direction: 'pull' | 'push';
      amount: number;
      accountId?: string;
      bankAccount?: RequestOf<'createBankTransfer'>['bankAccount'];
      acceptedAt: number;
    }
  >();
  readonly authorizations = new Map<string, { amount: number; approved: boolean }>();
  readonly cards = new Set<string>();
  readonly accounts = new Set<string>();
  readonly deactivated = new Set<string>();

  /** How long after acceptance a bank transfer settles or fails. */
  settleMs: number;
  /** How long after submission a KYC application is decided. */
  kycDecisionMs: number;
  readonly #signer: Webhook;
  readonly #issuer: SandboxCardIssuer;
  readonly #key: Buffer;
  readonly #answers = new Map<string, Stored>();
  readonly #server: Server;

  constructor(o: ReferenceAdapterOptions) {
    this.#signer = new Webhook(o.signingSecret);
    this.settleMs = o.settleMs ?? 1_000;
    this.kycDecisionMs = o.kycDecisionMs ?? 500;
    this.#key = createHash('sha256').update(`coffer:reference-adapter:${o.signingSecret}`).digest();
    this.#issuer = new SandboxCardIssuer(this.#key);
    this.#server = createServer((req, res) => {
      this.#inFlight++;
      this.mostAtOnce = Math.max(this.mostAtOnce, this.#inFlight);
      res.once('close', () => this.#inFlight--);
      this.#handle(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
  }

  /** Starts listening; resolves with the base URL (use it for every *_PROVIDER_URL). */
  async listen(port = 0, host = '127.0.0.1'): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => resolve());
    });
    const { port: bound } = this.#server.address() as AddressInfo;
    return `http://${host.includes(':') ? `[${host}]` : host}:${bound}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** The calls made with this idempotency key (or, for a GET, about this reference). */
  callsFor(reference: string): AdapterCall[] {
    return this.calls.filter(
      (c) =>
        c.idempotencyKey === reference || (c.method === 'GET' && c.path.endsWith(`/${encodeURIComponent(reference)}`)),
    );
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    const call: AdapterCall = { method: req.method ?? '', path, signed: false, status: 0, replayed: false };
    this.calls.push(call);
    const finish = (status: number, answer?: unknown, sign = true) => {
      call.status = status;
      const text = answer === undefined ? '' : JSON.stringify(answer);
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      const id = req.headers['webhook-id'];
      if (sign && typeof id === 'string') {
        const now = new Date();
        Object.assign(headers, {
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': this.#signer.sign(id, now, text),
        });
      }
      res.writeHead(status, headers).end(text);
    };

    const body = await readBody(req);
    if (body === undefined) return finish(413, { error: 'body too large' }, false);
    try {
      this.#signer.verify(body, headerStrings(req), { jsonParse: false });
      call.signed = true;
    } catch {
      return finish(401, { error: 'the request signature does not verify' }, false);
    }
    const matched = route(call.method, path);
    if (!matched) return finish(404, { error: 'no such operation' });
    const [name, reference] = matched;
    call.operation = name;

    let answer: unknown;
    if (OPERATIONS[name].method === 'GET') {
      answer = this.#read(name, reference!);
      if (answer === undefined) return finish(404, { error: `unknown reference ${reference}` });
    } else {
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(body) as Record<string, unknown>;
      } catch {
        return finish(400, { error: 'the body is not JSON' });
      }
      call.body = parsed;
      const valid = validatorOf(OPERATIONS[name].request!);
      if (!valid(parsed))
        return finish(400, { error: 'the body does not match the operation', detail: valid.errors?.[0] });
      if (name === 'submitKycDocuments' && !this.applications.has(String(parsed.application)))
        return finish(404, { error: `unknown application ${String(parsed.application)}` });
      if (name === 'createBankTransfer' && (parsed.accountId === undefined) === (parsed.bankAccount === undefined))
        return finish(400, { error: 'a transfer names its account by accountId or by bankAccount, one of the two' });
      if (name === 'createBankTransfer' && parsed.bankAccount !== undefined && parsed.direction !== 'push')
        return finish(400, { error: 'an account by its numbers can only be pushed to' });
      const key = req.headers['idempotency-key'];
      if (typeof key !== 'string' || key !== parsed.reference)
        return finish(400, { error: "Idempotency-Key must equal the body's reference" });
      call.idempotencyKey = key;
      // Keys are per operation; the same key with another body is a caller's bug.
      const fingerprint = createHash('sha256').update(body).digest('hex');
      const stored = this.#answers.get(`${name}:${key}`);
      if (stored) {
        if (stored.fingerprint !== fingerprint)
          return finish(409, { error: 'this Idempotency-Key was used with another body' });
        call.replayed = true;
        answer = await stored.answer;
      } else {
        // Kept before any await: a concurrent request with the key waits for this answer.
        const work = this.#do(name, parsed as never);
        this.#answers.set(`${name}:${key}`, { fingerprint, answer: work });
        answer = await work;
      }
    }

    const fault = this.#takeFault(call.method, path);
    if (!fault) return finish(200, answer);
    switch (fault.kind) {
      case 'status':
        return finish(fault.status, { error: 'injected failure' }, false);
      case 'delay':
        await delay(fault.ms);
        return finish(200, answer);
      case 'malformed':
        return finish(200, { ...(answer as object), reference: undefined, unexpected: true });
      case 'bad-signature': {
        const text = JSON.stringify(answer);
        call.status = 200;
        res
          .writeHead(200, {
            'content-type': 'application/json',
            'webhook-id': String(req.headers['webhook-id']),
            'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
            'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}`,
          })
          .end(text);
        return;
      }
    }
  }

  #takeFault(method: string, path: string): Fault | undefined {
    const i = this.faults.findIndex((f) => path.startsWith(f.path) && (!f.method || f.method === method));
    return i < 0 ? undefined : this.faults.splice(i, 1)[0];
  }

  /** The work of a POST, done once per key. */
  async #do<N extends OperationName>(name: N, body: RequestOf<N>): Promise<AnswerOf<N>> {
    const now = Date.now();
    const r: unknown = body;
    switch (name) {
      case 'submitKycApplication': {
        const a = r as RequestOf<'submitKycApplication'>;
        this.applications.set(a.reference, { email: a.email, submittedAt: now });
        return this.#read('getKycApplication', a.reference) as AnswerOf<N>;
      }
      case 'createKycDocumentLink': {
        const l = r as RequestOf<'createKycDocumentLink'>;
        this.documentLinks.set(l.reference, { application: l.application, redirectUrl: l.redirectUrl });
        return {
          reference: l.reference,
          url: `https://verify.example.com/session/${this.#digest(l.reference).slice(0, 24)}`,
        } as AnswerOf<N>;
      }
      case 'submitKycDocuments': {
        const d = r as RequestOf<'submitKycDocuments'>;
        this.applications.get(d.application)!.documentsAt = now;
        return {
          reference: d.reference,
          status: (this.#read('getKycApplication', d.application) as { status: string }).status,
        } as AnswerOf<N>;
      }
      case 'linkAccount': {
        const a = r as RequestOf<'linkAccount'>;
        const digest = this.#digest(a.reference);
        const institutionName = a.institutionName ?? 'Reference Bank';
        const accountType = a.accountType ?? 'checking';
        const externalId = `acc_${digest.slice(0, 24)}`;
        this.accounts.add(externalId);
        return {
          reference: a.reference,
          provider: 'Reference',
          externalId,
          accountType,
          accountName: `${institutionName} ${accountType === 'checking' ? 'Checking' : 'Savings'}`,
          accountMask: a.accountMask ?? String(parseInt(digest.slice(24, 32), 16) % 10_000).padStart(4, '0'),
          institutionName,
          institutionId: `ins_${institutionName
            .toLowerCase()
            .replace(/[^a-z0-9]+/g, '_')
            .slice(0, 40)}`,
        } as AnswerOf<N>;
      }
      case 'deactivateAccount': {
        const a = r as RequestOf<'deactivateAccount'>;
        this.deactivated.add(a.externalId);
        return { reference: a.reference, deactivated: true } as AnswerOf<N>;
      }
      case 'createBankTransfer': {
        const t = r as RequestOf<'createBankTransfer'>;
        this.transfers.set(t.reference, {
          direction: t.direction,
          amount: t.amount,
          accountId: t.accountId,
          bankAccount: t.bankAccount,
          acceptedAt: now,
        });
        return this.#read('getBankTransfer', t.reference) as AnswerOf<N>;
      }
      case 'issueCard': {
        const c = r as RequestOf<'issueCard'>;
        this.cards.add(c.reference);
        return {
          reference: c.reference,
          ...(await this.#issuer.issue({ reference: c.reference, amount: c.amount, now: new Date(now) })),
        } as AnswerOf<N>;
      }
      case 'authorizeCard': {
        const a = r as RequestOf<'authorizeCard'>;
        const approved = a.amount % 100 !== 2;
        this.authorizations.set(a.reference, { amount: a.amount, approved });
        const code = approved ? 'approved' : 'do_not_honor';
        const data = {
          processor: 'reference',
          authorization: `auth_${this.#digest(a.reference).slice(0, 20)}`,
          outcome: code,
          ...(a.meta ? { echo: a.meta } : {}),
        };
        return { reference: a.reference, approved, code, data } as AnswerOf<N>;
      }
      default:
        throw new Error(`${name} is not a POST`);
    }
  }

  /** The answer to a GET (undefined: unknown reference). */
  #read(name: OperationName, reference: string): unknown {
    const now = Date.now();
    if (name === 'getKycApplication') {
      const a = this.applications.get(reference);
      if (!a) return undefined;
      const since = a.documentsAt ?? a.submittedAt;
      const decided = now - since >= this.kycDecisionMs;
      return { reference, status: decided ? sandboxKycDecision(a.email, a.documentsAt !== undefined) : 'Pending' };
    }
    if (name === 'getBankTransfer') {
      const t = this.transfers.get(reference);
      if (!t) return undefined;
      const providerRef = `ref_${t.direction}_${this.#digest(reference).slice(0, 16)}`;
      if (now - t.acceptedAt < this.settleMs) return { reference, providerRef, status: 'pending' };
      return t.amount % 100 === 4
        ? { reference, providerRef, status: 'failed', failureReason: 'R01: insufficient funds' }
        : { reference, providerRef, status: 'settled' };
    }
    return undefined;
  }

  #digest(reference: string): string {
    return createHmac('sha256', this.#key).update(reference).digest('hex');
  }
}

function route(method: string, path: string): [OperationName, string?] | undefined {
  for (const [name, op] of Object.entries(OPERATIONS) as [OperationName, (typeof OPERATIONS)[OperationName]][]) {
    if (op.method !== method) continue;
    const [prefix, param] = op.path.split(':');
    if (
      param === undefined
        ? path === prefix
        : path.startsWith(prefix!) && path.length > prefix!.length && !path.slice(prefix!.length).includes('/')
    ) {
      return [name, param === undefined ? undefined : decodeURIComponent(path.slice(prefix!.length))];
    }
  }
  return undefined;
}

function headerStrings(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') out[k] = v;
  return out;
}

async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
