// The campaign's history: one JSON object per line. Operations (`op`: what a client asked and
// what it finally got), the HTTP attempts under them (`attempt`), faults (`fault`), webhook
// requests received (`hook`) and notes. The checker reads it back.
import { createWriteStream, readFileSync, type WriteStream } from 'node:fs';

export interface OpRecord {
  kind: 'op';
  /** Sequence number of the operation, unique in the campaign. */
  seq: number;
  client: number;
  /** What was asked: deposit, withdraw, authorize, capture, ... */
  name: string;
  merchant: string;
  /** The entity ids the operation concerns (wallet, intent, payment, user). */
  refs: Record<string, string>;
  amount?: number;
  idempotencyKey?: string;
  at: number;
  end: number;
  /** The final HTTP status, or undefined when no answer came (a timeout, a reset). */
  status?: number;
  code?: string;
  error?: string;
  /** The id of the resource the answer named (transaction, payment, refund, ...). */
  resultId?: string;
}

export interface AttemptRecord {
  kind: 'attempt';
  seq: number;
  method: string;
  path: string;
  at: number;
  end: number;
  status?: number;
  code?: string;
  error?: string;
}

export interface FaultRecord {
  kind: 'fault';
  fault: string;
  target?: string;
  phase: 'start' | 'end';
  at: number;
  detail?: string;
}

export interface HookRecord {
  kind: 'hook';
  receiver: string;
  webhookId: string;
  eventId?: string;
  bodyHash: string;
  /** What the receiver did: an HTTP status, or hang / close. */
  answer: number | 'hang' | 'close';
  at: number;
}

interface NoteRecord {
  kind: 'note';
  at: number;
  text: string;
  data?: unknown;
}

export type HistoryRecord = OpRecord | AttemptRecord | FaultRecord | HookRecord | NoteRecord;

export class History {
  private out: WriteStream;
  constructor(readonly file: string) {
    this.out = createWriteStream(file, { flags: 'w' });
  }
  write(r: HistoryRecord): void {
    this.out.write(`${JSON.stringify(r)}\n`);
  }
  close(): Promise<void> {
    return new Promise((resolve) => this.out.end(resolve));
  }
}

export function readHistory(file: string): HistoryRecord[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as HistoryRecord);
}
