// Delivery under concurrency and crashes: several workers share the outbox without sending
// one attempt twice; a receiver that is down across a server restart gets every event.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { webhookBody } from '../../test/fixtures.ts';
import { createTestApp, freshDatabaseUrl, LOCAL_RECEIVERS } from '../../test/harness.ts';
import { freePort, startServer } from '../../test/process.ts';
import { startReceiver } from '../../test/receiver.ts';
import { TestClock } from '../../clock.ts';

describe('delivery workers', () => {
  test("two workers (two processes' worth) on one database never send an event twice", async () => {
    const clock = new TestClock(new Date('2026-08-01T00:00:00Z'));
    const a = await createTestApp({ clock, env: LOCAL_RECEIVERS });
    const b = await createTestApp({ clock, env: LOCAL_RECEIVERS });
    const rx = await startReceiver();
    try {
      const m = await a.createMerchant();
      const w = (await a.request('POST', '/api/v1/webhooks', { as: m, body: webhookBody({ url: rx.url }) })).body.data;
      const n = 300;
      for (let i = 0; i < n; i++)
        assert.equal((await a.request('POST', `/api/v1/webhooks/${w.id}/test`, { as: m })).status, 201);
      // Both workers race for the same due deliveries, several rounds at once each.
      await Promise.all([
        a.ctx.webhooks.runOnce(),
        b.ctx.webhooks.runOnce(),
        a.ctx.webhooks.runOnce(),
        b.ctx.webhooks.runOnce(),
      ]);
      const ids = rx.received.map((r) => r.headers['webhook-id']);
      assert.equal(ids.length, n, `received ${ids.length}`);
      assert.equal(new Set(ids).size, n, 'every event exactly once');
      const list = await a.request('GET', '/api/v1/webhook-events?filter[deliveryState]=succeeded&page[limit]=1', {
        as: m,
      });
      assert.equal(list.body.meta.total, n);
    } finally {
      await a.close();
      await b.close();
      await rx.close();
    }
  });

  test('a receiver that is down while the server restarts still gets every event afterwards', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'coffer-wh-'));
    const databaseUrl = await freshDatabaseUrl();
    const receiverPort = await freePort();
    const env = {
      DATA_DIR: dir,
      DATABASE_URL: databaseUrl,
      COFFER_ENV: 'sandbox',
      ADMIN_TOKEN: 'cft_mOAMHrpbDpC2vkobaFp8cej39LVu3vCEDc-ah1meCg_wCh8l',
      CARD_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64'),
      WIDGET_SIGNING_KEY: Buffer.alloc(32, 4).toString('base64'),
      WEBHOOK_RETRY_DELAYS: Array(12).fill('0.3').join(','),
      WEBHOOK_TIMEOUT_MS: '500',
      WEBHOOK_POLL_MS: '50',
      // The down receiver opens its host's breaker: a short cool-down lets the test see the end.
      WEBHOOK_BREAKER_COOLDOWN_MS: '1000',
      ...LOCAL_RECEIVERS,
    };
    let server = await startServer(env);
    let rx: Awaited<ReturnType<typeof startReceiver>> | undefined;
    try {
      await server.waitFor(/Stop with Ctrl-C/);
      const admin = `http://127.0.0.1:${server.ports.admin}`;
      const created = (await (
        await fetch(`${admin}/admin/v1/clients`, {
          method: 'POST',
          headers: { authorization: `Bearer ${env.ADMIN_TOKEN}`, 'content-type': 'application/vnd.api+json' },
          body: JSON.stringify({ data: { type: 'Client', attributes: { name: 'Restart' } } }),
        })
      ).json()) as { data: { id: string; attributes: { secret: string } } };
      const auth = {
        'client-id': created.data.id,
        authorization: `Bearer ${created.data.attributes.secret}`,
        'content-type': 'application/vnd.api+json',
      };
      const call = (port: number, method: string, p: string, body?: unknown) =>
        fetch(`http://127.0.0.1:${port}${p}`, {
          method,
          headers: auth,
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
      const w = (await (
        await call(
          server.ports.api,
          'POST',
          '/api/v1/webhooks',
          webhookBody({ url: `http://127.0.0.1:${receiverPort}/hooks` }),
        )
      ).json()) as { data: { id: string } };
      const eventIds: string[] = [];
      for (let i = 0; i < 5; i++) {
        const ev = (await (await call(server.ports.api, 'POST', `/api/v1/webhooks/${w.data.id}/test`)).json()) as {
          data: { id: string };
        };
        eventIds.push(ev.data.id);
      }
      // Let a few attempts fail against the closed port, then crash the server mid-schedule.
      await new Promise((r) => setTimeout(r, 1000));
      server.kill('SIGKILL');
      await server.exited;
      rx = await startReceiver(undefined, receiverPort);
      server = await startServer(env);
      await server.waitFor(/Stop with Ctrl-C/);
      await rx.waitFor(5, 30_000);
      const got = new Set(rx.received.map((r) => r.headers['webhook-id']));
      for (const id of eventIds) assert.ok(got.has(id), `event ${id} delivered after the restart`);
      // The receiver answers before the server records the attempt: wait for the record.
      type Ev = { data: { attributes: { deliveries: { state: string; attempts: { error: string | null }[] }[] } } };
      let d: Ev['data']['attributes']['deliveries'][number] | undefined;
      for (let i = 0; i < 50 && d?.state !== 'succeeded'; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 100));
        d = ((await (await call(server.ports.api, 'GET', `/api/v1/webhook-events/${eventIds[0]}`)).json()) as Ev).data
          .attributes.deliveries[0];
      }
      assert.ok(d);
      assert.equal(d.state, 'succeeded');
      assert.ok(d.attempts.length >= 2, 'failed attempts before the restart are on record');
      // A receiver on loopback: its attempts show only that the delivery was not taken.
      assert.match(d.attempts[0]!.error ?? '', /^not delivered/);
    } finally {
      server.kill('SIGTERM');
      await server.exited;
      await rx?.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
