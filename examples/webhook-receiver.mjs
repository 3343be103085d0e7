// A minimal Coffer webhook receiver: verifies the signature, answers 2xx fast, handles each
// event once. Run: COFFER_WEBHOOK_SECRET=whsec_... PORT=4000 node examples/webhook-receiver.mjs
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const secret = process.env.COFFER_WEBHOOK_SECRET; // whsec_… from POST /api/v1/webhooks
const standard = new Webhook(secret);
const seen = new Set(); // use your database in production: retries resend the same event id

createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8'); // verify the raw bytes, before parsing
    let event;
    try {
      // Standard Webhooks: HMAC of "id.timestamp.body", and rejects stale timestamps (replays).
      event = standard.verify(body, req.headers);
    } catch {
      res.writeHead(401).end();
      return;
    }
    // The same body is also signed in x-service-signature (hex HMAC-SHA256 of the raw body).
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    const expected = Buffer.from(createHmac('sha256', key).update(body).digest('hex'));
    const given = Buffer.from(String(req.headers['x-service-signature'] ?? ''));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      res.writeHead(401).end();
      return;
    }
    res.writeHead(204).end(); // answer first; slow work goes to a queue
    if (seen.has(event.data.id)) return;
    seen.add(event.data.id);
    const { topic, userId } = event.data.attributes;
    const resource = event.included[0];
    console.log(`${topic} ${resource.type} ${resource.id}${userId ? ` user ${userId}` : ''}`);
  });
}).listen(Number(process.env.PORT ?? 4000), '127.0.0.1', () => console.log('listening'));
