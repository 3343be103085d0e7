// One signed call to an operator's provider adapter (docs/providers.md). The request is signed
// with Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature` over the body)
// and a POST carries `Idempotency-Key`; the answer must be a 200, signed the same way under the
// request's `webhook-id`, and match its schema, or the call failed. A failed call is a
// ProviderError: the caller records nothing and tries again later with the same reference.
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import type { ProviderPort } from '../../config.ts';
import {
  firstErrorOf,
  OPERATIONS,
  validatorOf,
  type AnswerOf,
  type OperationName,
  type RequestOf,
} from './protocol.ts';
import { inSpan, SpanKind, tracing } from '../../observability/tracing.ts';

/** The largest answer read; anything longer is not an answer of this protocol. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** An adapter did not answer, answered an error, or answered something that cannot be trusted. */
export class ProviderError extends Error {
  constructor(
    readonly port: ProviderPort,
    message: string,
    opts?: { cause?: unknown },
  ) {
    super(`${port} adapter: ${message}`, opts);
    this.name = 'ProviderError';
  }
}

export interface AdapterOptions {
  port: ProviderPort;
  baseUrl: string;
  signingSecret: string;
  timeoutMs: number;
}

type Input<N extends OperationName> = (typeof OPERATIONS)[N]['request'] extends null
  ? { reference: string }
  : RequestOf<N>;

export class AdapterClient {
  readonly #o: AdapterOptions;
  readonly #signer: Webhook;
  readonly #agent: Agent;

  constructor(o: AdapterOptions) {
    this.#o = o;
    this.#signer = new Webhook(o.signingSecret);
    this.#agent = new Agent({
      keepAliveTimeout: 10_000,
      headersTimeout: o.timeoutMs,
      bodyTimeout: o.timeoutMs,
      connect: { timeout: o.timeoutMs },
    });
  }

  call<N extends OperationName>(name: N, input: Input<N>): Promise<AnswerOf<N>> {
    if (!tracing.enabled) return this.#call(name, input);
    const op = OPERATIONS[name];
    return inSpan(
      `provider ${this.#o.port} ${name}`,
      SpanKind.CLIENT,
      {
        'coffer.provider': this.#o.port,
        'coffer.provider.operation': name,
        'http.request.method': op.method,
        'url.template': op.path,
      },
      () => this.#call(name, input),
    );
  }

  async #call<N extends OperationName>(name: N, input: Input<N>): Promise<AnswerOf<N>> {
    const op = OPERATIONS[name];
    const fail = (message: string, cause?: unknown): never => {
      throw new ProviderError(this.#o.port, `${name} ${input.reference}: ${message}`, { cause });
    };
    const path = op.path.replace(':reference', encodeURIComponent(input.reference));
    const payload = op.request === null ? '' : JSON.stringify(input);
    const id = `msg_${randomUUID()}`;
    const now = new Date();
    const headers: Record<string, string> = {
      accept: 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': this.#signer.sign(id, now, payload),
    };
    if (op.method === 'POST')
      Object.assign(headers, { 'content-type': 'application/json', 'idempotency-key': input.reference });

    let status: number;
    let answerHeaders: Record<string, string | string[] | undefined>;
    let text: string | undefined;
    try {
      const res = await request(`${this.#o.baseUrl}${path}`, {
        method: op.method,
        headers,
        body: op.method === 'POST' ? payload : undefined,
        dispatcher: this.#agent,
        signal: AbortSignal.timeout(this.#o.timeoutMs),
      });
      status = res.statusCode;
      answerHeaders = res.headers;
      text = await readCapped(res.body);
    } catch (err) {
      return fail(
        err instanceof Error && err.name === 'TimeoutError'
          ? `no answer within ${this.#o.timeoutMs} ms`
          : 'unreachable',
        err,
      );
    }
    if (status !== 200) return fail(`answered ${status}`);
    if (text === undefined) return fail(`the answer is longer than ${MAX_ANSWER_BYTES} bytes`);
    const one = (h: string) => {
      const v = answerHeaders[h];
      return Array.isArray(v) ? v[0] : v;
    };
    // The answer is signed under the request's id: an answer to another request does not verify.
    if (one('webhook-id') !== id) return fail('the answer is not signed for this request');
    try {
      this.#signer.verify(
        text,
        {
          'webhook-id': id,
          'webhook-timestamp': one('webhook-timestamp') ?? '',
          'webhook-signature': one('webhook-signature') ?? '',
        },
        { jsonParse: false },
      );
    } catch (err) {
      return fail("the answer's signature does not verify", err);
    }
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      return fail('the answer is not JSON');
    }
    const valid = validatorOf(op.answer);
    if (!valid(answer)) return fail(`malformed answer (${firstErrorOf(valid)})`);
    if ((answer as { reference: string }).reference !== input.reference)
      return fail('the answer is for another reference');
    return answer as AnswerOf<N>;
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}

/** The body as text, or undefined when it is longer than an answer can be. */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** What every HTTP implementation of a port shares (live accepts nothing else: see providers/index.ts). */
export abstract class HttpPort {
  protected readonly adapter: AdapterClient;

  constructor(o: AdapterOptions) {
    this.adapter = new AdapterClient(o);
  }

  close(): Promise<void> {
    return this.adapter.close();
  }
}
