// Webhook receivers on loopback whose behaviour the campaign changes: answer 200, answer slowly,
// hang, answer 500, or close the connection without an answer. Every request is recorded.
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { History, HookRecord } from './history.ts';

export type ReceiverMode =
  | { kind: 'ok' }
  | { kind: 'slow'; ms: number }
  | { kind: 'hang' }
  | { kind: 'error' }
  | { kind: 'close' };

export class ChaosReceiver {
  private server: Server;
  private sockets = new Set<Socket>();
  mode: ReceiverMode = { kind: 'ok' };
  url = '';
  /** Requests received so far. */
  count = 0;

  constructor(
    readonly name: string,
    private readonly history: History,
  ) {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        let eventId: string | undefined;
        try {
          eventId = (JSON.parse(body.toString('utf8')) as { data?: { id?: string } }).data?.id;
        } catch {
          eventId = undefined;
        }
        const mode = this.mode;
        const answer: HookRecord['answer'] =
          mode.kind === 'hang' ? 'hang' : mode.kind === 'close' ? 'close' : mode.kind === 'error' ? 500 : 200;
        const record: HookRecord = {
          kind: 'hook',
          receiver: name,
          webhookId: String(req.headers['webhook-id'] ?? ''),
          eventId,
          bodyHash: createHash('sha256').update(body).digest('hex').slice(0, 16),
          answer,
          at: Date.now(),
        };
        if (mode.kind === 'hang') return this.note(record); // the socket is closed by Coffer's timeout
        if (mode.kind === 'close') {
          this.note(record);
          req.socket.destroy();
          return;
        }
        const send = () => {
          // A slow answer counts from when it is sent: Coffer may have given up by then.
          record.at = Date.now();
          this.note(record);
          res.writeHead(answer as number).end();
        };
        if (mode.kind === 'slow') setTimeout(send, mode.ms);
        else send();
      });
    });
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  private note(r: HookRecord): void {
    this.count++;
    this.history.write(r);
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks/${this.name}`;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
