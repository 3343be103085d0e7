// Regenerates the README's configuration table and .env.example from src/settings.ts
// (npm run docs:config); src/config.test.ts checks both are current.
import { readFile, writeFile } from 'node:fs/promises';
import { envExample, withSettingsTable } from '../src/settings.ts';

const readme = new URL('../README.md', import.meta.url);
await writeFile(readme, withSettingsTable(await readFile(readme, 'utf8')));
await writeFile(new URL('../.env.example', import.meta.url), envExample());
