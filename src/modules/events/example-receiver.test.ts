// The receiver example in the README (examples/webhook-receiver.mjs) works against Coffer.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { webhookBody } from '../../test/fixtures.ts';
import { createTestApp, LOCAL_RECEIVERS } from '../../test/harness.ts';
import { freePort } from '../../test/process.ts';
import { loopbackIsPublic } from '../../test/receiver.ts';

const EXAMPLE = fileURLToPath(new URL('../../../examples/webhook-receiver.mjs', import.meta.url));

test('the example receiver verifies, acknowledges and handles a delivery once', async () => {
  const t = await createTestApp({ env: LOCAL_RECEIVERS, webhookIsPublicAddress: loopbackIsPublic });
  const port = await freePort();
  const m = await t.createMerchant();
  const w = (
    await t.request('POST', '/api/v1/webhooks', { as: m, body: webhookBody({ url: `http://127.0.0.1:${port}/hooks` }) })
  ).body.data;
  const proc = spawn(process.execPath, [EXAMPLE], {
    env: { ...process.env, PORT: String(port), COFFER_WEBHOOK_SECRET: w.attributes.secret },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  try {
    while (!out.includes('listening')) await new Promise((r) => setTimeout(r, 50));
    const sent = await t.request('POST', `/api/v1/webhooks/${w.id}/test`, { as: m });
    await t.ctx.webhooks.runOnce();
    await t.request('POST', `/api/v1/webhook-events/${sent.body.data.id}/replay`, { as: m });
    await t.ctx.webhooks.runOnce();
    const ev = (await t.request('GET', `/api/v1/webhook-events/${sent.body.data.id}`, { as: m })).body.data.attributes;
    assert.deepEqual(
      ev.deliveries.map((d: { state: string; attempts: { statusCode: number }[] }) => [
        d.state,
        d.attempts[0]!.statusCode,
      ]),
      [
        ['succeeded', 204],
        ['succeeded', 204],
      ],
    );
    assert.equal(
      out
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('WebhookTest')).length,
      1,
      `handled once:\n${out}`,
    );
    // A forged request is refused.
    const forged = await fetch(`http://127.0.0.1:${port}/hooks`, {
      method: 'POST',
      body: '{}',
      headers: { 'webhook-id': 'x', 'webhook-timestamp': '1', 'webhook-signature': 'v1,AAAA' },
    });
    assert.equal(forged.status, 401);
  } finally {
    proc.kill();
    await t.close();
  }
});
