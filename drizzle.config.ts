import { defineConfig } from 'drizzle-kit';

// Generates SQL migrations from src/db/schema.ts: npm run db:generate -- --name <what>
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema.ts',
  out: './src/db/migrations',
});
