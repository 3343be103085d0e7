// Webhook registration (docs/adr/0006-events-in-an-outbox.md, docs/adr/0001-spec-then-accrue.md): create with a secret, shown on every read, list, get, PATCH,
// DELETE, topic and URL rules, the address policy (SSRF), the cap per merchant, merchant scoping.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../db/open.ts';
import { webhookBody } from '../../test/fixtures.ts';
import { createTestApp, errorsOf, LOCAL_RECEIVERS, type Merchant, type TestApp } from '../../test/harness.ts';
import { approvedUser } from '../../test/money.ts';

describe('webhook registration', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp({ env: LOCAL_RECEIVERS });
    m = await t.createMerchant();
    other = await t.createMerchant();
  });
  after(() => t.close());

  test("create is 201 with the secret; reads of the merchant's own webhook show it (Accrue requires it); it is stored sealed", async () => {
    const res = await t.request('POST', '/api/v1/webhooks', {
      as: m,
      body: webhookBody({ topics: ['ApplicationApproved', 'ApplicationDeclined'] }),
    });
    assert.equal(res.status, 201);
    const w = res.body.data;
    assert.equal(w.type, 'Webhook');
    assert.equal(res.headers.location, `http://api.test/api/v1/webhooks/${w.id}`);
    assert.deepEqual(w.attributes.topics, ['ApplicationApproved', 'ApplicationDeclined']);
    assert.equal(w.attributes.enabled, true);
    assert.match(w.attributes.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(w.attributes.secret.slice(6), 'base64').length, 32);
    const got = await t.request('GET', `/api/v1/webhooks/${w.id}`, { as: m });
    assert.equal(got.status, 200);
    assert.equal(got.body.data.attributes.secret, w.attributes.secret);
    const patched = await t.request('PATCH', `/api/v1/webhooks/${w.id}`, {
      as: m,
      body: { data: { type: 'Webhook', attributes: { name: 'Renamed' } } },
    });
    assert.equal(patched.status, 200, patched.raw);
    assert.equal(patched.body.data.attributes.secret, w.attributes.secret, 'a change keeps the secret');
    assert.equal(
      (await t.request('GET', `/api/v1/webhooks/${w.id}`, { as: other })).status,
      404,
      "another merchant's webhook, secret and all, is not found",
    );
    const [row] = rowsOf<{ secret_sealed: string }>(
      await t.ctx.db.execute(sql`select secret_sealed from webhooks where id = ${w.id}`),
    );
    assert.ok(!row!.secret_sealed.includes(w.attributes.secret.slice(6)), 'not stored in plain text');
    assert.equal(
      t.ctx.sealer.open(row!.secret_sealed, 'webhook-secret', `webhooks:${w.id}`).toString(),
      w.attributes.secret,
    );
  });

  test("list pages through the merchant's own webhooks, newest first", async () => {
    const lm = await t.createMerchant();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push(
        (await t.request('POST', '/api/v1/webhooks', { as: lm, body: webhookBody({ name: `W${i}` }) })).body.data.id,
      );
      t.clock.advance(1000);
    }
    const res = await t.request('GET', '/api/v1/webhooks?page[limit]=2', { as: lm });
    assert.deepEqual(res.body.meta, { total: 3, limit: 2, offset: 0 });
    assert.deepEqual(
      res.body.data.map((w: { id: string }) => w.id),
      [ids[2], ids[1]],
    );
    assert.ok(
      res.body.data.every((w: { attributes: { secret: string } }) => /^whsec_/.test(w.attributes.secret)),
      'each with its secret',
    );
    assert.equal(
      new Set(res.body.data.map((w: { attributes: { secret: string } }) => w.attributes.secret)).size,
      2,
      'each its own',
    );
    const theirs = await t.request('GET', '/api/v1/webhooks?page[limit]=50', { as: other });
    assert.ok(theirs.body.data.every((w: { id: string }) => !ids.includes(w.id)));
  });

  test('PATCH changes name, url, topics and enabled', async () => {
    const created = (await t.request('POST', '/api/v1/webhooks', { as: m, body: webhookBody({}) })).body.data;
    const id = created.id;
    t.clock.advance(1000);
    const res = await t.request('PATCH', `/api/v1/webhooks/${id}`, {
      as: m,
      body: {
        data: {
          type: 'Webhook',
          attributes: {
            name: 'Renamed',
            url: 'https://hooks.example.com/coffer',
            topics: ['PaymentCreated'],
            enabled: false,
          },
        },
      },
    });
    assert.equal(res.status, 200);
    assert.deepEqual(
      { ...res.body.data.attributes, createdAt: undefined },
      {
        name: 'Renamed',
        url: 'https://hooks.example.com/coffer',
        topics: ['PaymentCreated'],
        enabled: false,
        secret: created.attributes.secret,
        updatedAt: t.clock.now().toISOString(),
        createdAt: undefined,
      },
    );
    const empty = await t.request('PATCH', `/api/v1/webhooks/${id}`, {
      as: m,
      body: { data: { type: 'Webhook', attributes: {} } },
    });
    assert.equal(empty.status, 400);
  });

  test('DELETE is 204; the webhook is then 404 everywhere', async () => {
    const id = (await t.request('POST', '/api/v1/webhooks', { as: m, body: webhookBody({}) })).body.data.id;
    const del = await t.request('DELETE', `/api/v1/webhooks/${id}`, { as: m });
    assert.equal(del.status, 204);
    for (const [method, url, body] of [
      ['GET', `/api/v1/webhooks/${id}`, undefined],
      ['PATCH', `/api/v1/webhooks/${id}`, { data: { type: 'Webhook', attributes: { name: 'x' } } }],
      ['DELETE', `/api/v1/webhooks/${id}`, undefined],
      ['POST', `/api/v1/webhooks/${id}/test`, undefined],
    ] as const) {
      const res = await t.request(method, url, { as: m, body });
      assert.equal(res.status, 404, `${method} ${url}`);
      assert.equal(errorsOf(res)[0]!.code, 'WebhookNotFound');
    }
  });

  test('topics must come from the catalogue; ["*"] only alone', async () => {
    const cases: [unknown, string][] = [
      [['OrderShipped'], '/data/attributes/topics/0'],
      [['*', 'ApplicationApproved'], '/data/attributes/topics'],
      [[], '/data/attributes/topics'],
      [['ApplicationApproved', 'ApplicationApproved'], '/data/attributes/topics'],
      ['*', '/data/attributes/topics'],
      [['WebhookTest'], '/data/attributes/topics/0'],
    ];
    for (const [topics, pointer] of cases) {
      const res = await t.request('POST', '/api/v1/webhooks', { as: m, body: webhookBody({ topics }) });
      assert.equal(res.status, 400, JSON.stringify(topics));
      assert.ok(
        errorsOf(res).some((e) => e.source?.pointer === pointer),
        `${JSON.stringify(topics)}: ${res.raw}`,
      );
    }
    // "*" beside topics: Accrue's code for it.
    const mixed = await t.request('POST', '/api/v1/webhooks', {
      as: m,
      body: webhookBody({ topics: ['*', 'ApplicationApproved'] }),
    });
    assert.equal(errorsOf(mixed)[0]!.code, 'InvalidTopics');
    const all = await t.request('POST', '/api/v1/webhooks', { as: m, body: webhookBody({ topics: ['*'] }) });
    assert.equal(all.status, 201);
  });

  test('only http(s) URLs without credentials or fragments', async () => {
    for (const url of [
      'ftp://example.com/x',
      'javascript:alert(1)',
      'not a url',
      '/relative',
      'https://user:pw@example.com/h',
      'https://example.com/h#frag',
      ' ',
    ]) {
      const res = await t.request('POST', '/api/v1/webhooks', { as: m, body: webhookBody({ url }) });
      assert.equal(res.status, 400, url);
      assert.equal(errorsOf(res)[0]!.source?.pointer, '/data/attributes/url', url);
    }
  });

  describe("a webhook without a url (Accrue's CreateWebhook): events recorded, nothing sent", () => {
    const deliveriesOf = async (as: Merchant) => {
      const events = (await t.request('GET', '/api/v1/webhook-events?page[limit]=50', { as })).body.data as {
        id: string;
      }[];
      const all = await Promise.all(
        events.map(
          async (e) =>
            (await t.request('GET', `/api/v1/webhook-events/${e.id}`, { as })).body.data.attributes.deliveries,
        ),
      );
      return { events: events.length, deliveries: all.flat() as { state: string }[] };
    };

    test('created without a url, or with an empty one, it receives nothing until a url is set', async () => {
      const wm = await t.createMerchant();
      const res = await t.request('POST', '/api/v1/webhooks', {
        as: wm,
        body: { data: { type: 'Webhook', attributes: { name: 'Recorder', topics: ['*'], enabled: true } } },
      });
      assert.equal(res.status, 201, res.raw);
      assert.equal(res.body.data.attributes.url, '');
      assert.match(res.body.data.attributes.secret, /^whsec_/);
      const empty = await t.request('POST', '/api/v1/webhooks', { as: wm, body: webhookBody({ url: '' }) });
      assert.equal(empty.status, 201, empty.raw);
      await approvedUser(t, wm);
      const before = await deliveriesOf(wm);
      assert.ok(before.events > 0, 'the events are recorded');
      assert.deepEqual(before.deliveries, [], 'and sent nowhere');
      const test = await t.request('POST', `/api/v1/webhooks/${res.body.data.id}/test`, { as: wm });
      assert.equal(test.status, 400);
      assert.equal(errorsOf(test)[0]!.code, 'IllegalOperation');
      const [event] = (await t.request('GET', '/api/v1/webhook-events', { as: wm })).body.data;
      const replay = await t.request('POST', `/api/v1/webhook-events/${event.id}/replay`, {
        as: wm,
        body: { data: { type: 'WebhookEventReplay', attributes: { webhookId: res.body.data.id } } },
      });
      assert.deepEqual(
        errorsOf(replay).map((e) => [e.code, e.source?.pointer]),
        [['IllegalOperation', '/data/attributes/webhookId']],
      );
      // With a url it receives the next events.
      const set = await t.request('PATCH', `/api/v1/webhooks/${res.body.data.id}`, {
        as: wm,
        body: { data: { type: 'Webhook', id: res.body.data.id, attributes: { url: 'http://127.0.0.1:9/hooks' } } },
      });
      assert.equal(set.status, 200, set.raw);
      await approvedUser(t, wm);
      const after = await deliveriesOf(wm);
      assert.ok(after.deliveries.length > 0 && after.deliveries.every((d) => d.state === 'pending'));
      // Nothing left pending for the shared database's other tests to send.
      assert.equal((await t.request('DELETE', `/api/v1/webhooks/${res.body.data.id}`, { as: wm })).status, 204);
    });

    test('emptying the url stops sending: deliveries not yet made are canceled', async () => {
      const wm = await t.createMerchant();
      const id = (
        await t.request('POST', '/api/v1/webhooks', { as: wm, body: webhookBody({ url: 'http://127.0.0.1:9/closed' }) })
      ).body.data.id;
      await approvedUser(t, wm);
      assert.ok((await deliveriesOf(wm)).deliveries.every((d) => d.state === 'pending'));
      const res = await t.request('PATCH', `/api/v1/webhooks/${id}`, {
        as: wm,
        body: { data: { type: 'Webhook', attributes: { url: '' } } },
      });
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.data.attributes.url, '');
      const { deliveries } = await deliveriesOf(wm);
      assert.ok(deliveries.length > 0 && deliveries.every((d) => d.state === 'canceled'), JSON.stringify(deliveries));
      // A PATCH that leaves the url out keeps it (empty here).
      await t.request('PATCH', `/api/v1/webhooks/${id}`, {
        as: wm,
        body: { data: { type: 'Webhook', attributes: { name: 'Quiet' } } },
      });
      assert.equal((await t.request('GET', `/api/v1/webhooks/${id}`, { as: wm })).body.data.attributes.url, '');
    });
  });

  test("another merchant's webhook is 404", async () => {
    const id = (await t.request('POST', '/api/v1/webhooks', { as: m, body: webhookBody({}) })).body.data.id;
    for (const [method, url, body] of [
      ['GET', `/api/v1/webhooks/${id}`, undefined],
      ['PATCH', `/api/v1/webhooks/${id}`, { data: { type: 'Webhook', attributes: { name: 'x' } } }],
      ['DELETE', `/api/v1/webhooks/${id}`, undefined],
      ['POST', `/api/v1/webhooks/${id}/test`, undefined],
    ] as const) {
      assert.equal((await t.request(method, url, { as: other, body })).status, 404, `${method} ${url}`);
    }
    assert.equal((await t.request('GET', `/api/v1/webhooks/${id}`, { as: m })).status, 200, 'untouched');
  });
});

describe('webhook URLs', () => {
  let sandbox: TestApp;
  let live: TestApp;
  let local: TestApp;
  before(async () => {
    sandbox = await createTestApp();
    live = await createTestApp({ env: { COFFER_ENV: 'live', DATABASE_URL: 'postgres://unused/x' } });
    local = await createTestApp({ env: LOCAL_RECEIVERS });
  });
  after(() => Promise.all([sandbox.close(), live.close(), local.close()]));

  const refused = [
    'http://127.0.0.1/h',
    'http://127.8.9.10:8080/h',
    'http://localhost/h',
    'http://localhost./h',
    'http://api.localhost/h',
    'http://10.1.2.3/h',
    'http://172.16.0.5/h',
    'http://192.168.1.1/h',
    'http://169.254.169.254/latest/meta-data',
    'http://100.64.0.1/h',
    'http://0.0.0.0/h',
    'http://[::1]/h',
    'http://[fd00::1]/h',
    'http://[::ffff:127.0.0.1]/h',
    'http://metadata.internal/h',
    // Documentation ranges: never on the internet, sometimes used inside networks.
    'http://192.0.2.1/h',
    'http://198.51.100.7/h',
    'http://203.0.113.9/h',
    'http://[2001:db8::1]/h',
    'http://[3fff::1]/h',
    // IPv6 forms that carry a private IPv4 address.
    'http://[64:ff9b::127.0.0.1]/h', // NAT64
    'http://[64:ff9b::10.0.0.1]/h',
    'http://[2002:7f00:1::1]/h', // 6to4 of 127.0.0.1
    'http://[2002:a9fe:a9fe::1]/h', // 6to4 of 169.254.169.254
    'http://[::127.0.0.1]/h', // IPv4-compatible
    'http://[::ffff:0:127.0.0.1]/h', // IPv4-translated
    // Ranges no receiver has.
    'http://[fec0::1]/h', // site-local (deprecated)
    'http://[64:ff9b:1::a00:1]/h', // local-use NAT64
    'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/h', // Teredo
    'http://[100::1]/h', // discard-only
    'http://[ff02::1]/h',
  ];
  const accepted = [
    'https://hooks.example.com/coffer',
    'http://93.184.216.34/h',
    'https://[2606:4700::1111]/h',
    'https://[64:ff9b::8.8.8.8]/h', // NAT64 of a public address
    'https://[2002:808:808::1]/h', // 6to4 of a public address
  ];

  test('by default (sandbox and live) loopback, private, reserved and internal addresses are refused', async () => {
    for (const app of [sandbox, live]) {
      const m = await app.createMerchant();
      for (const url of refused) {
        const res = await app.request('POST', '/api/v1/webhooks', { as: m, body: webhookBody({ url }) });
        assert.equal(res.status, 400, `${app.ctx.config.environment} ${url}`);
        assert.equal(errorsOf(res)[0]!.source?.pointer, '/data/attributes/url');
        // The way past it, for a receiver on the developer's own machine.
        assert.match(
          errorsOf(res)[0]!.detail,
          /must be a public address .*; for local development, start the sandbox with WEBHOOK_ALLOW_PRIVATE=true\.$/,
          url,
        );
      }
    }
  });

  test('public addresses and names are accepted', async () => {
    for (const app of [sandbox, live]) {
      const m = await app.createMerchant();
      for (const url of accepted) {
        const res = await app.request('POST', '/api/v1/webhooks', { as: m, body: webhookBody({ url }) });
        assert.equal(res.status, 201, `${app.ctx.config.environment} ${url}`);
      }
    }
  });

  test('PATCH to a private URL is refused too', async () => {
    const m = await sandbox.createMerchant();
    const id = (
      await sandbox.request('POST', '/api/v1/webhooks', {
        as: m,
        body: webhookBody({ url: 'https://hooks.example.com/a' }),
      })
    ).body.data.id;
    const res = await sandbox.request('PATCH', `/api/v1/webhooks/${id}`, {
      as: m,
      body: { data: { type: 'Webhook', attributes: { url: 'http://10.0.0.1/h' } } },
    });
    assert.equal(res.status, 400);
  });

  test('with WEBHOOK_ALLOW_PRIVATE (local development), private receivers may be registered', async () => {
    const m = await local.createMerchant();
    for (const url of ['http://localhost:4000/hooks', 'http://127.0.0.1:4000/hooks', 'http://10.1.2.3/h']) {
      const res = await local.request('POST', '/api/v1/webhooks', { as: m, body: webhookBody({ url }) });
      assert.equal(res.status, 201, url);
    }
  });
});

describe('webhooks per merchant', () => {
  test('at most WEBHOOK_MAX_PER_MERCHANT (16 by default), counted one creation at a time', async () => {
    const t = await createTestApp();
    try {
      const m = await t.createMerchant();
      // Twenty at once: on PostgreSQL they race, and the count still holds.
      const all = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          t.request('POST', '/api/v1/webhooks', { as: m, body: webhookBody({ name: `W${i}` }) }),
        ),
      );
      assert.deepEqual(all.map((r) => r.status).sort(), [...Array(16).fill(201), ...Array(4).fill(400)]);
      const refusedOne = all.find((r) => r.status === 400)!;
      assert.equal(errorsOf(refusedOne)[0]!.code, 'WebhookLimitReached');
      assert.equal(errorsOf(refusedOne)[0]!.title, 'WebhookException');
      assert.equal((await t.request('GET', '/api/v1/webhooks', { as: m })).body.meta.total, 16);
      // Another merchant is not affected.
      const other = await t.createMerchant();
      assert.equal((await t.request('POST', '/api/v1/webhooks', { as: other, body: webhookBody({}) })).status, 201);
    } finally {
      await t.close();
    }
  });

  test('disabled webhooks count, deleted ones do not; the cap is configurable', async () => {
    const t = await createTestApp({ env: { WEBHOOK_MAX_PER_MERCHANT: '2' } });
    try {
      const m = await t.createMerchant();
      const create = (attributes: Record<string, unknown> = {}) =>
        t.request('POST', '/api/v1/webhooks', { as: m, body: webhookBody(attributes) });
      const first = await create({ enabled: false });
      assert.equal(first.status, 201);
      assert.equal((await create()).status, 201);
      assert.equal((await create()).status, 400);
      assert.equal((await t.request('DELETE', `/api/v1/webhooks/${first.body.data.id}`, { as: m })).status, 204);
      assert.equal((await create()).status, 201);
      assert.equal((await create()).status, 400);
    } finally {
      await t.close();
    }
  });
});
