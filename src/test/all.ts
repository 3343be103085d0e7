// The whole suite in one process, so every test file shares one database (see harness.ts).
// `npm test` runs this; a single file also runs alone: node --import tsx --test <file>.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { after } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { closeTestDatabase } from './harness.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const only = process.env.TEST_FILTER; // e.g. TEST_FILTER=users npm test
const files = (readdirSync(root, { recursive: true }) as string[])
  .filter((f) => f.endsWith('.test.ts') && (!only || f.includes(only)))
  .sort();
for (const f of files) await import(pathToFileURL(path.join(root, f)).href);
after(closeTestDatabase);
