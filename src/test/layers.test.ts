// The layering of src/ (docs/architecture.md#layers), checked with dependency-cruiser and the
// rules in .dependency-cruiser.cjs: no file imports a layer above its own, no cycles, no route
// file used as a library, and no two modules importing each other.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult, type IViolation } from 'dependency-cruiser';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const rules = createRequire(import.meta.url)(path.join(ROOT, '.dependency-cruiser.cjs'));

/**
 * Module pairs that still import each other, each to be untangled (the set may only shrink):
 * payments and payment-intents share the checkout's writes, and bank transfers call back into
 * what a settled transfer completes.
 */
const KNOWN_MUTUAL = new Set([
  'bank-transfers <-> counterparties',
  'bank-transfers <-> payments',
  'bank-transfers <-> transactions',
  'bank-transfers <-> withdrawals',
  'events <-> webhooks',
  'payment-intents <-> payments',
]);

async function cruiseIn(dir: string): Promise<ICruiseResult> {
  const { output } = await cruise(['src'], {
    ...rules.options,
    validate: true,
    ruleSet: { forbidden: rules.forbidden },
    baseDir: dir,
  });
  return output as ICruiseResult;
}

const describeViolation = (v: IViolation) => `${v.rule.name}: ${v.from} → ${v.to}`;

/** `a <-> b` for each pair of src/modules folders that import each other. */
function mutualModules(result: ICruiseResult): string[] {
  const folder = (p: string) => /^src\/modules\/([^/]+)\//.exec(p)?.[1];
  const edges = new Set<string>();
  for (const m of result.modules) {
    const a = folder(m.source);
    for (const d of m.dependencies) {
      const b = folder(d.resolved);
      if (a && b && a !== b) edges.add(`${a} ${b}`);
    }
  }
  return [...edges]
    .map((e) => e.split(' '))
    .filter(([a, b]) => a! < b! && edges.has(`${b} ${a}`))
    .map(([a, b]) => `${a} <-> ${b}`)
    .sort();
}

describe('layers', () => {
  test('no file imports a layer above its own, no cycles, no route file used as a library', async () => {
    const result = await cruiseIn(ROOT);
    assert.ok(result.summary.totalCruised > 150, 'the whole of src/ is cruised');
    assert.deepEqual(result.summary.violations.map(describeViolation), []);
  });

  test('no new pair of modules imports each other', async () => {
    const pairs = mutualModules(await cruiseIn(ROOT));
    assert.deepEqual(
      pairs.filter((p) => !KNOWN_MUTUAL.has(p)),
      [],
      'two modules import each other: move what both need into one of them or a layer below',
    );
    assert.deepEqual(
      [...KNOWN_MUTUAL].filter((p) => !pairs.includes(p)),
      [],
      'a known pair is untangled: take it off KNOWN_MUTUAL',
    );
  });

  test('the rules catch an upward import, a cycle and a route file used as a library', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'coffer-layers-'));
    try {
      const files: Record<string, string> = {
        'src/http/errors.ts': 'export const x = 1;\n',
        'src/db/open.ts': "import { x } from '../http/errors.ts';\nexport const y = x;\n",
        'src/ledger/a.ts': "import { b } from './b.ts';\nexport const a = () => b;\n",
        'src/ledger/b.ts': "import { a } from './a.ts';\nexport const b = () => a;\n",
        'src/modules/users/routes.ts': 'export const routes = 1;\n',
        'src/modules/wallets/domain.ts': "import { routes } from '../users/routes.ts';\nexport const d = routes;\n",
      };
      for (const [file, text] of Object.entries(files)) {
        await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
        await writeFile(path.join(dir, file), text);
      }
      await writeFile(path.join(dir, 'tsconfig.json'), '{"compilerOptions":{"allowImportingTsExtensions":true}}');
      const names = new Set((await cruiseIn(dir)).summary.violations.map((v) => v.rule.name));
      assert.ok(names.has('db-below-the-rest'), [...names].join());
      assert.ok(names.has('no-circular'), [...names].join());
      assert.ok(names.has('no-route-file-as-library'), [...names].join());
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
