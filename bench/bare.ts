// Reference servers measured beside Coffer in the same run:
//   bare.ts PORT              a bare Fastify 5 + TypeBox JSON route
//   bare.ts PORT DB_URL SQL   the same, plus one prepared pg query per request (no auth,
//                             rate limit, validation or logging): the floor for a GET by key
import Fastify from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import pg from 'pg';
import { Type } from 'typebox';

const [port, dbUrl, text, ...values] = process.argv.slice(2);
const app = Fastify().withTypeProvider<TypeBoxTypeProvider>();
if (dbUrl && text) {
  const pool = new pg.Pool({ connectionString: dbUrl, max: 10 });
  app.get('/', async () => (await pool.query({ name: 'q', text, values })).rows[0]);
} else {
  app.get('/', { schema: { response: { 200: Type.Object({ hello: Type.String() }) } } }, async () => ({
    hello: 'world',
  }));
}
const address = await app.listen({ host: '127.0.0.1', port: Number(port ?? 0) });
process.stdout.write(`listening ${address}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
