// Response serializers (serializer.ts): the schemas with nullable fields as type arrays must
// serialize every document exactly as the schemas as written do, and Nullable must actually be
// rewritten (or the serializers still run an Ajv validator per nullable field).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fastJsonStringify from 'fast-json-stringify';
import { Type } from 'typebox';
import { PaymentIntent } from '../modules/payment-intents/schemas.ts';
import { User } from '../modules/users/schemas.ts';
import { Wallet } from '../modules/wallets/schemas.ts';
import { listDocument, Nullable, ref, Timestamp } from './schemas.ts';
import { WebhookEvent } from '../modules/events/schemas.ts';
import {
  buildSerializer,
  holdsJsonText,
  JSON_TEXT,
  JsonText,
  nullableAsTypes,
  referencedSchemas,
  unquoteJsonTexts,
} from './serializer.ts';

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

describe('response serializers', () => {
  test('a nullable field of one type becomes a type array; a union with a $ref stays a union; a string enum gets its type', () => {
    const schema = Type.Object({
      s: Nullable(Type.String({ description: 'a note' })),
      t: Nullable(Timestamp()),
      n: Nullable(Type.Integer()),
      o: Nullable(Type.Object({ a: Type.String() })),
      r: Nullable(ref(PaymentIntent)),
      e: Type.Enum(['A', 'B']),
      u: Type.Union([Type.Literal('x'), Type.Literal('y')]),
    });
    const before = clone(schema);
    const out = nullableAsTypes(schema) as { properties: Record<string, Record<string, unknown>> };
    assert.deepEqual(clone(schema), before, 'the schema as written is left as it is');
    assert.deepEqual(out.properties.s, { type: ['string', 'null'], description: 'a note' });
    assert.deepEqual(out.properties.t, { type: ['string', 'null'], format: 'date-time' });
    assert.deepEqual(out.properties.n, { type: ['integer', 'null'] });
    assert.deepEqual((out.properties.o as { type: unknown }).type, ['object', 'null']);
    assert.ok(Array.isArray(out.properties.r!.anyOf), 'a $ref branch is left to anyOf');
    assert.deepEqual(out.properties.e, { enum: ['A', 'B'], type: 'string' });
    assert.ok(Array.isArray(out.properties.u!.anyOf), 'a union of literals is left as it is');
    assert.doesNotMatch(
      JSON.stringify(nullableAsTypes(PaymentIntent)),
      /"anyOf"/,
      "no anyOf is left in a payment intent's schema",
    );
  });

  test('documents serialize as the schemas as written serialize them', () => {
    const intent = (over: Record<string, unknown>) => ({
      id: 'pi_1',
      type: 'PaymentIntent',
      attributes: {
        amount: 1250,
        walletId: null,
        userId: 'u_1',
        status: 'Promotable',
        error: null,
        reference: 'order-"7"\n',
        initiator: 'Merchant',
        paymentMethod: 'Wallet',
        lookUpId: null,
        balance: { available: 5, eligibleReward: 0, upperLimit: 5 },
        billingAddress: null,
        email: 'é@example.com',
        fullName: null,
        phoneNumber: null,
        expiresAt: '2026-11-28T08:49:25.224Z',
        updatedAt: '2026-11-28T07:49:25.224Z',
        createdAt: '2026-11-28T07:49:25.224Z',
        ...over,
      },
      relationships: { payments: { data: [{ type: 'Payment', id: 'p_1' }] } },
      links: { self: 'http://localhost/api/v1/payment-intents/pi_1' },
      undeclared: 'dropped',
    });
    const user = {
      id: 'u_1',
      type: 'User',
      attributes: {
        disabled: false,
        publicId: 'P1',
        profile: { firstName: null, lastName: 'Lovelace', email: null, phoneNumber: '+14155550123' },
        attachedProfile: {},
        updatedAt: '2026-01-01T00:00:00.000Z',
        createdAt: '2026-01-01T00:00:00.000Z',
      },
      links: { self: 'x' },
    };
    const cases: [unknown, unknown[]][] = [
      [
        PaymentIntent,
        [
          intent({}),
          intent({ walletId: 'w_1', error: 'WalletClosed', billingAddress: { city: 'Paris' }, fullName: 'Ada' }),
        ],
      ],
      [User, [user]],
      [
        listDocument(ref(PaymentIntent)),
        [
          {
            data: [intent({})],
            meta: { total: 1, limit: 10, offset: 0 },
            links: { self: 's', first: 'f', last: 'l', prev: null, next: null },
          },
        ],
      ],
    ];
    const external = Object.fromEntries([PaymentIntent, User, Wallet].map((s) => [(s as { $id?: string }).$id!, s]));
    for (const [schema, docs] of cases) {
      const asWritten = fastJsonStringify(schema as object, { schema: external as never });
      const rewritten = buildSerializer(external)({ schema });
      for (const doc of docs) assert.equal(rewritten(doc), asWritten(doc));
    }
  });

  describe('JSON texts', () => {
    const Item = Type.Object({
      name: Type.String(),
      body: Type.Record(Type.String(), Type.Unknown(), { [JSON_TEXT]: true }),
      note: Nullable(Type.String()),
    });
    const Doc = Type.Object({ data: Type.Array(Item), tags: Type.Record(Type.String(), Type.String()) });
    const serialize = buildSerializer()({ schema: Doc });
    // Strings elsewhere hold U+0000 and quotes next to it: they are escaped, so they stay as they are.
    const bodies = [
      { a: 1, s: 'x"\u0000"y', n: null, nested: { list: [1, 'é', { q: '"' }] } },
      {},
      { deep: [[[]]], e: '\u0000' },
    ];
    const doc = {
      data: bodies.map((b, i) => ({
        name: i === 0 ? '"\u0000' : `n${i}\u0000"`,
        body: new JsonText(JSON.stringify(b)),
        note: i === 1 ? null : '\u0000"\u0000',
      })),
      tags: { 'k\u0000"': '"\u0000v' },
    };

    test('a JsonText is written as its text, in place, and the rest as JSON.stringify writes it', () => {
      const out = serialize(doc);
      assert.equal(out, JSON.stringify(doc), 'JSON.stringify reads a JsonText by toJSON: the same document');
      assert.deepEqual(
        (JSON.parse(out) as { data: { body: unknown }[] }).data.map((d) => d.body),
        bodies,
      );
      for (const b of bodies) assert.ok(out.includes(`"body":${JSON.stringify(b)}`), 'each text verbatim');
    });

    test('the text is not parsed again: a text with spacing keeps it', () => {
      const text = '{ "a" : [ 1, 2 ] }';
      assert.equal(
        serialize({ data: [{ name: 'x', body: new JsonText(text), note: null }], tags: {} }),
        `{"data":[{"name":"x","body":${text},"note":null}],"tags":{}}`,
      );
    });

    test('unquoteJsonTexts leaves JSON without texts as it is', () => {
      for (const json of ['', '{}', '{"a":"\\u0000"}', '["\\"",1]']) assert.equal(unquoteJsonTexts(json), json);
      assert.equal(unquoteJsonTexts('["\u0000{}\u0000","\u0000[1]\u0000"]'), '[{},[1]]');
      assert.throws(() => unquoteJsonTexts('["\u0000{}"]'), /not closed/, 'never a loop over an unclosed text');
      assert.throws(() => new JsonText('{"a":"\u0000"}'), /U\+0000/);
    });

    test('a schema that refers to one holding a JSON text gets the unquoting serializer; others do not need it', () => {
      const shared = Object.fromEntries([WebhookEvent, PaymentIntent].map((x) => [(x as { $id?: string }).$id!, x]));
      assert.equal(holdsJsonText(listDocument(ref(WebhookEvent)), shared), true);
      assert.equal(holdsJsonText(listDocument(ref(PaymentIntent)), shared), false);
      const Loop = { $id: 'Loop', type: 'object', properties: { next: { $ref: 'Loop#' } } };
      assert.equal(holdsJsonText(Loop, { Loop }), false, 'a schema that refers to itself ends');
      const events = buildSerializer(shared)({ schema: listDocument(ref(WebhookEvent)) });
      const text = '{"data":{"id":"e1"}}';
      const event = {
        id: 'e1',
        type: 'WebhookEvent',
        attributes: {
          id: 'e1',
          topic: 'UserCreated',
          clientId: 'c1',
          updatedAt: '2026-01-01T00:00:00.000Z',
          createdAt: '2026-01-01T00:00:00.000Z',
          deliveryState: 'none',
          payload: new JsonText(text),
        },
        relationships: { event: { data: { type: 'User', id: 'u1' } } },
        links: { self: 's' },
      };
      const page = {
        data: [event],
        meta: { total: 1, limit: 10, offset: 0 },
        links: { self: 's', first: 'f', prev: null, next: null },
      };
      const out = events(page);
      assert.ok(out.includes(`"payload":${text}`), out);
      assert.equal(out, JSON.stringify(page));
    });

    test('only the serializer sees the marked field as a string; the schema as written keeps it', () => {
      const written = clone(Item);
      assert.deepEqual((nullableAsTypes(Item) as { properties: Record<string, unknown> }).properties.body, {
        type: 'string',
        format: 'unsafe',
      });
      assert.deepEqual(clone(Item), written);
      assert.equal((Item.properties.body as { type?: string }).type, 'object');
    });
  });

  describe('building', () => {
    const B = { $id: 'B', type: 'object', properties: { n: { type: 'integer' } } };
    const A = {
      $id: 'A',
      type: 'object',
      properties: { b: { $ref: 'B#' }, bs: { type: 'array', items: { $ref: 'B#/properties/n' } } },
    };
    const C = { $id: 'C', type: 'object', properties: { c: { type: 'string' } } };
    const Self = { $id: 'Self', type: 'object', properties: { next: { $ref: 'Self#' } } };
    const shared = { A, B, C, Self };

    test('a serializer is given the shared schemas its schema refers to, and theirs, not the others', () => {
      assert.deepEqual(referencedSchemas({ type: 'object', properties: { a: { $ref: 'A#' } } }, shared), { A, B });
      assert.deepEqual(referencedSchemas({ anyOf: [{ $ref: 'C' }, { type: 'null' }] }, shared), { C });
      assert.deepEqual(referencedSchemas({ $ref: 'Self#' }, shared), { Self }, 'a schema that refers to itself ends');
      assert.deepEqual(referencedSchemas({ type: 'string' }, shared), {});
      assert.deepEqual(
        referencedSchemas({ $ref: '#/definitions/x' }, shared),
        {},
        'a reference within the schema itself',
      );
      assert.deepEqual(
        referencedSchemas({ $ref: 'Nowhere#' }, shared),
        shared,
        'an unknown id: all of them, for fast-json-stringify to name it',
      );
      const serialize = buildSerializer(shared)({ schema: { type: 'object', properties: { a: { $ref: 'A#' } } } });
      assert.equal(serialize({ a: { b: { n: 7 }, bs: [1, 2] }, x: 1 }), '{"a":{"b":{"n":7},"bs":[1,2]}}');
    });

    test('the same schemas give the same serializer in every app of a process; different ones do not', () => {
      const schema = { type: 'object', properties: { a: { $ref: 'A#' }, note: Nullable(Type.String()) } };
      const first = buildSerializer(shared)({ schema });
      // Another app: its own copies of the same shared schemas and route schema.
      assert.equal(buildSerializer(clone(shared))({ schema: clone(schema) }), first, 'built once');
      const otherB = { ...B, properties: { n: { type: 'string' } } };
      const withOtherB = buildSerializer({ ...shared, B: otherB })({ schema });
      assert.notEqual(withOtherB, first, 'a shared schema it refers to differs');
      assert.equal(withOtherB({ a: { b: { n: 'x' } } }), '{"a":{"b":{"n":"x"}}}');
      assert.equal(
        buildSerializer({ ...shared, C: { ...C, properties: {} } })({ schema }),
        first,
        'a shared schema it does not refer to is no part of it',
      );
      assert.notEqual(
        buildSerializer(shared)({ schema: { ...schema, required: ['a'] } }),
        first,
        'the schema itself differs',
      );
      assert.notEqual(buildSerializer(shared, { rounding: 'floor' })({ schema }), first, 'the options differ');
    });
  });
});
