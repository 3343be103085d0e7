// npm test's second reporter: a line on stderr for each test file finished, with how many of
// the suite's files are done and the time since the start, e.g.
//   [12/171 files, 3m05s] src/modules/users/users.test.ts
// Top-level tests run one after another in the order all.ts imports their files, so a file is
// done when a test of the next one starts. JavaScript: node loads reporters without tsx.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tsImport } from 'tsx/esm/api';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ALL = fileURLToPath(new URL('./all.ts', import.meta.url));
/** @type {{ suiteFiles: () => string[] }} */
const { suiteFiles } = await tsImport('./files.ts', import.meta.url);

/** @param {AsyncIterable<{ type: string, data: { nesting?: number, file?: string } }>} source */
export default async function* progress(source) {
  const start = Date.now();
  const total = suiteFiles().length;
  let done = 0;
  /** @type {string | undefined} */
  let current;
  /** @param {string} file */
  const line = (file) => {
    done++;
    const s = Math.round((Date.now() - start) / 1000);
    const elapsed = `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
    return `[${done}/${total} files, ${elapsed}] ${path.relative(ROOT, file)}\n`;
  };
  for await (const event of source) {
    const file = event.data.file;
    if (event.type !== 'test:start' || event.data.nesting !== 0 || !file || file === ALL || file === current) continue;
    if (current) yield line(current);
    current = file;
  }
  if (current) yield line(current);
}
