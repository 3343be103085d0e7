// Sealed values at rest (card data here; webhook secrets and account numbers are sealed the
// same way): bound to their row and column, a full 16-byte tag, key ids for rotation, the v1
// format still readable, and the re-seal job moving everything to the current key.
import assert from 'node:assert/strict';
import { createCipheriv, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../db/open.ts';
import { createTestApp, type Merchant, type TestApp } from '../test/harness.ts';
import { fundedWallet } from '../test/money.ts';
import { keyIdOf } from './sealer.ts';

/** The harness's CARD_ENCRYPTION_KEY, and a newer one. */
const K1 = Buffer.alloc(32, 7);
const K2 = randomBytes(32);

/** What the v1 format's sealer wrote: the purpose alone as associated data, no key id. */
function sealV1(master: Buffer, plaintext: string, purpose: string): string {
  const key = Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), `coffer:${purpose}`, 32));
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(purpose));
  const ct = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return ['v1', iv.toString('base64url'), ct.toString('base64url'), cipher.getAuthTag().toString('base64url')].join(
    '.',
  );
}

describe('sealed card data', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant({ rails: 'card' });
  });
  after(() => t.close());

  /** A card-rail payment whose card can be read, with its number and cvc. */
  async function card(app: TestApp = t) {
    const { wallet } = await fundedWallet(app, m, 5_000);
    const intent = await app.request('POST', '/api/v1/payment-intents', {
      as: m,
      body: { data: { type: 'CreatePaymentIntent', attributes: { amount: 1_000, walletId: wallet.id } } },
    });
    const auth = await app.request('POST', `/api/v1/payment-intents/${intent.body.data.id}/authorize`, {
      as: m,
      body: { data: { type: 'AuthorizePaymentIntent', attributes: { amount: 1_000, idempotencyKey: randomUUID() } } },
    });
    assert.equal(auth.status, 201, auth.raw);
    const paymentId = auth.body.included[0].id as string;
    const read = await readCard(app, paymentId);
    assert.equal(read.statusCode, 200, read.body);
    const [row] = rowsOf<{ id: string; number_sealed: string; cvc_sealed: string }>(
      await app.ctx.db.execute(
        sql`select id, number_sealed, cvc_sealed from virtual_cards where payment_id = ${paymentId}`,
      ),
    );
    return {
      paymentId,
      row: row!,
      number: read.json().data.attributes.number as string,
      cvc: read.json().data.attributes.cvc as string,
    };
  }
  const readCard = (app: TestApp, paymentId: string) =>
    app.card.inject({ method: 'GET', url: `/api/v1/payments/${paymentId}/card`, headers: m.headers });
  const setSealed = (id: string, number: string, cvc: string) =>
    t.ctx.db.execute(sql`update virtual_cards set number_sealed = ${number}, cvc_sealed = ${cvc} where id = ${id}`);

  test('sealed as v2 under the key id of CARD_ENCRYPTION_KEY', async () => {
    const a = await card();
    assert.match(a.row.number_sealed, new RegExp(`^v2\\.${keyIdOf(K1)}\\.[\\w-]{16}\\.[\\w-]+\\.[\\w-]{22}$`));
    assert.ok(a.row.cvc_sealed.startsWith(`v2.${keyIdOf(K1)}.`));
  });

  test("a value moved to another card, or to the card's other column, does not open", async () => {
    const a = await card();
    const b = await card();
    await setSealed(b.row.id, a.row.number_sealed, a.row.cvc_sealed);
    const moved = await readCard(t, b.paymentId);
    assert.equal(moved.statusCode, 500);
    assert.ok(!moved.body.includes(a.number));
    await setSealed(b.row.id, b.row.cvc_sealed, b.row.number_sealed);
    assert.equal((await readCard(t, b.paymentId)).statusCode, 500, 'number and cvc swapped');
    await setSealed(b.row.id, b.row.number_sealed, b.row.cvc_sealed);
    assert.equal((await readCard(t, b.paymentId)).statusCode, 200);
  });

  test('a value whose tag is cut short (4 bytes) does not open', async () => {
    const a = await card();
    const cut = (v: string) => {
      const parts = v.split('.');
      parts[parts.length - 1] = Buffer.from(parts.at(-1)!, 'base64url').subarray(0, 4).toString('base64url');
      return parts.join('.');
    };
    await setSealed(a.row.id, cut(a.row.number_sealed), a.row.cvc_sealed);
    const res = await readCard(t, a.paymentId);
    assert.equal(res.statusCode, 500);
    assert.ok(!res.body.includes(a.number));
    // The same for the v1 format.
    await setSealed(a.row.id, cut(sealV1(K1, a.number, 'card')), a.row.cvc_sealed);
    assert.equal((await readCard(t, a.paymentId)).statusCode, 500);
  });

  test('a v1 value still opens; the re-seal job rewrites it as v2 under the current key', async () => {
    const a = await card();
    await setSealed(a.row.id, sealV1(K1, a.number, 'card'), sealV1(K1, a.cvc, 'card'));
    const v1 = await readCard(t, a.paymentId);
    assert.equal(v1.statusCode, 200, v1.body);
    assert.equal(v1.json().data.attributes.number, a.number);
    await t.ctx.jobs.runOnce('reseal');
    const [row] = rowsOf<{ number_sealed: string; cvc_sealed: string }>(
      await t.ctx.db.execute(sql`select number_sealed, cvc_sealed from virtual_cards where id = ${a.row.id}`),
    );
    assert.ok(
      row!.number_sealed.startsWith(`v2.${keyIdOf(K1)}.`) && row!.cvc_sealed.startsWith(`v2.${keyIdOf(K1)}.`),
      row!.number_sealed,
    );
    assert.deepEqual((await readCard(t, a.paymentId)).json().data.attributes.cvc, a.cvc);
  });

  test('rotation: the new key seals, the old one still opens, the re-seal job retires it', async () => {
    const old = await card();
    const rotated = await createTestApp({
      env: { CARD_ENCRYPTION_KEY: K2.toString('base64'), CARD_ENCRYPTION_OLD_KEYS: K1.toString('base64') },
    });
    let newOnly: TestApp | undefined;
    try {
      assert.equal(
        (await readCard(rotated, old.paymentId)).json().data.attributes.number,
        old.number,
        'the old key still opens',
      );
      const fresh = await card(rotated);
      assert.ok(fresh.row.number_sealed.startsWith(`v2.${keyIdOf(K2)}.`), 'the new key seals');
      await rotated.ctx.jobs.runOnce('reseal');
      const [row] = rowsOf<{ number_sealed: string }>(
        await t.ctx.db.execute(sql`select number_sealed from virtual_cards where id = ${old.row.id}`),
      );
      assert.ok(row!.number_sealed.startsWith(`v2.${keyIdOf(K2)}.`), 'moved to the new key');
      // Without the old key (nothing left sealed with it), the card still reads.
      newOnly = await createTestApp({ env: { CARD_ENCRYPTION_KEY: K2.toString('base64') } });
      assert.equal((await readCard(newOnly, old.paymentId)).json().data.attributes.number, old.number);
      assert.equal((await readCard(t, old.paymentId)).statusCode, 500, 'a process without the new key cannot read it');
    } finally {
      await rotated.close();
      await newOnly?.close();
      // The suite's other files share this database and its key: rotate back.
      const back = await createTestApp({ env: { CARD_ENCRYPTION_OLD_KEYS: K2.toString('base64') } });
      await back.ctx.jobs.runOnce('reseal');
      await back.close();
    }
  });
});
