// The documentation keeps working. The banner's "Try it" and every shell step of the walk-throughs
// (README.md, then the user guides in reading order) run, in order, in one bash session against a
// sandbox started for the purpose, twice in a row on the same sandbox, and each must end as its
// `# → NNN …` comment says (or with 2xx answers where it shows none); every relative link in
// README.md and docs/ resolves, #anchors included; no doc tells the project's history.
//
// The docs are written to be pasted: ids are captured into shell variables by the steps that
// make them, so the test only replaces the default ports and the data folder with the sandbox's.
// A block the test cannot run is preceded by `<!-- docs-test: skip: <why> -->`.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freshDatabaseUrl } from './harness.ts';
import { startServer, type ServerProcess } from './process.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The walk-throughs, in reading order: each guide after README.md continues in the shell of the one before. */
const RUN = ['README.md', 'docs/getting-started.md', 'docs/money.md', 'docs/payments.md', 'docs/widgets.md'];
const markdownIn = (dir: string) =>
  readdirSync(path.join(ROOT, dir))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `${dir}/${f}`);
const LINKED = ['README.md', ...markdownIn('docs'), ...markdownIn('docs/adr'), 'chaos/README.md'];
/** The longest documents, and how long each may grow: a reader's document, not a notebook. */
const BUDGETS: [RegExp, number][] = [
  [/^docs\/benchmarks\.md$/, 150],
  [/^docs\/scaling\.md$/, 150],
  [/^docs\/operations\.md$/, 400],
  [/^docs\/adr\/\d{4}-.*\.md$/, 80],
];
/** The folders whose code may cite the docs. */
const CODE_DIRS = ['src', 'bench', 'chaos', 'packages', 'examples', 'scripts'];
const SKIP = /^<!--\s*docs-test:\s*skip:\s*(\S.*?)\s*-->$/;

interface Block {
  line: number;
  code: string;
  /** Why the test does not run it (from the skip comment before it). */
  skip?: string;
}

/** The fenced sh/bash blocks of a markdown document. */
function shellBlocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i]!.match(/^```\s*(sh|bash|shell)\b/);
    if (!open) {
      if (lines[i]!.startsWith('```')) while (++i < lines.length && !lines[i]!.startsWith('```'));
      continue;
    }
    let before = i - 1;
    while (before >= 0 && lines[before]!.trim() === '') before--;
    const skip = before >= 0 ? lines[before]!.trim().match(SKIP)?.[1] : undefined;
    const start = i + 1;
    while (++i < lines.length && !lines[i]!.startsWith('```'));
    blocks.push({ line: start + 1, code: lines.slice(start, i).join('\n'), ...(skip ? { skip } : {}) });
  }
  return blocks;
}

interface Step {
  /** 1-based line of the step's first line in its document. */
  line: number;
  command: string;
  /** Whether a `# →` comment says what the step gives. */
  expected: boolean;
  /** The HTTP status of the step's last curl call (`# → NNN`). */
  status?: number;
  /** `"member":value` pairs the comment shows, each of which the step's output must contain. */
  members: string[];
  /** A single word the comment shows, which must be the step's whole output. */
  word?: string;
}

const isComplete = (text: string) => !/\\$/.test(text) && spawnSync('bash', ['-n'], { input: text }).status === 0;

/** A block's commands (each as bash parses it: continued lines, multi-line quotes), each with what its `# →` comment expects. */
function steps(block: Block): Step[] {
  const out: Step[] = [];
  let pending: { line: number; lines: string[] } | undefined;
  const expect = (step: Step | undefined, comment: string) => {
    const m = comment.match(/#\s*→\s*(?:(\d{3})\b)?(.*)$/);
    if (!step || !m || step.expected) return;
    step.expected = true;
    if (m[1]) step.status = Number(m[1]);
    const rest = m[2]!.trim();
    step.members = rest.match(/"[A-Za-z_]\w*":(?:"[^"…]*"|-?\d+(?:\.\d+)?|true|false|null)/g) ?? [];
    if (/^[A-Za-z]+$/.test(rest)) step.word = rest;
  };
  block.code.split('\n').forEach((text, i) => {
    if (!pending) {
      if (/^\s*(#|$)/.test(text)) {
        expect(out.at(-1), text);
        return;
      }
      pending = { line: block.line + i, lines: [] };
    }
    pending.lines.push(text);
    const command = pending.lines.join('\n');
    if (!isComplete(command)) return;
    const step: Step = { line: pending.line, command, expected: false, members: [] };
    out.push(step);
    for (const l of pending.lines) expect(step, l);
    pending = undefined;
  });
  if (pending) out.push({ line: pending.line, command: pending.lines.join('\n'), expected: false, members: [] });
  return out;
}

/** The code files under a folder (what git keeps: no dependencies, builds or results). */
function codeFiles(dir: string): string[] {
  const full = path.join(ROOT, dir);
  if (!existsSync(full)) return [];
  return readdirSync(full, { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) return ['node_modules', 'dist', 'results'].includes(e.name) ? [] : codeFiles(rel);
    return /\.(ts|tsx|mts|js|mjs|cjs|sql)$/.test(e.name) ? [rel] : [];
  });
}

/** GitHub's anchors for a document's headings. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const heading of withoutFences(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const base = heading[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    result.add(n === 0 ? base : `${base}-${n}`);
  }
  return result;
}

const withoutFences = (markdown: string) => markdown.replace(/^```[\s\S]*?^```/gm, '');

/** The markdown without fenced blocks and inline code (which show links, not make them). */
const withoutCode = (markdown: string) => withoutFences(markdown).replace(/`[^`\n]*`/g, '');

describe('the docs', () => {
  test('every relative link in README.md, docs/ and chaos/README.md resolves, #anchors included', async () => {
    const broken: string[] = [];
    for (const doc of LINKED) {
      const markdown = await readFile(path.join(ROOT, doc), 'utf8');
      for (const [, target] of withoutCode(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue; // http:, https:, mailto:
        const [file, anchor] = target!.split('#') as [string, string | undefined];
        const resolved = file ? path.resolve(path.dirname(path.join(ROOT, doc)), file) : path.join(ROOT, doc);
        if (!existsSync(resolved)) broken.push(`${doc}: ${target} (no such file)`);
        else if (anchor && resolved.endsWith('.md') && !anchors(readFileSync(resolved, 'utf8')).has(anchor))
          broken.push(`${doc}: ${target} (no such heading)`);
      }
    }
    assert.deepEqual(broken, []);
  });

  test('every docs/ reference in the code resolves, #anchors included, and none cites the spec’s decisions', async () => {
    const broken: string[] = [];
    for (const file of CODE_DIRS.flatMap(codeFiles))
      (await readFile(path.join(ROOT, file), 'utf8')).split('\n').forEach((l, i) => {
        const at = `${file}:${i + 1}`;
        // "decisions" and a section sign: a file that is not in the repository.
        if (/\bdecisions\s*\u00a7/i.test(l))
          broken.push(`${at}: cites the spec's decisions, which are not in the repository`);
        for (const [ref] of l.matchAll(/(?<![\w/.-])docs\/[\w./-]*\w(?:#[\w-]+)?/g)) {
          const [target, anchor] = ref.split('#') as [string, string | undefined];
          const resolved = path.join(ROOT, target);
          if (!existsSync(resolved)) broken.push(`${at}: ${ref} (no such file)`);
          else if (anchor && target.endsWith('.md') && !anchors(readFileSync(resolved, 'utf8')).has(anchor))
            broken.push(`${at}: ${ref} (no such heading)`);
        }
      });
    assert.deepEqual(broken, []);
  });

  test('no doc tells the project’s history', async () => {
    const history =
      /\b(earlier|later|previous|this|first|second) session\b|in a slower hour|tried and not kept|\b(previous|earlier|old) code\b|\bthis stop\b/gi;
    const found: string[] = [];
    for (const doc of LINKED) {
      (await readFile(path.join(ROOT, doc), 'utf8')).split('\n').forEach((l, i) => {
        for (const m of l.matchAll(history)) found.push(`${doc}:${i + 1}: ${m[0]}`);
      });
    }
    assert.deepEqual(found, []);
  });

  test('each long document stays within its line budget', async () => {
    const over: string[] = [];
    for (const doc of LINKED)
      for (const [pattern, budget] of BUDGETS) {
        const lines = (await readFile(path.join(ROOT, doc), 'utf8')).trimEnd().split('\n').length;
        if (pattern.test(doc) && lines > budget) over.push(`${doc}: ${lines} lines, budget ${budget}`);
      }
    assert.ok(
      LINKED.some((d) => BUDGETS[3]![0].test(d)),
      'docs/adr/ holds the decision records',
    );
    assert.deepEqual(over, []);
  });

  test('no doc carries a commit hash', async () => {
    // 7 to 40 hex digits standing alone, with a digit and a letter among them (not a number, not a word).
    const hash = /(?<![\w./:@#-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w/-])/g;
    const found: string[] = [];
    for (const doc of LINKED)
      (await readFile(path.join(ROOT, doc), 'utf8')).split('\n').forEach((l, i) => {
        for (const m of l.matchAll(hash)) found.push(`${doc}:${i + 1}: ${m[0]}`);
      });
    assert.deepEqual(found, []);
  });

  test('the hash rule finds hashes and leaves ids, numbers and words alone', () => {
    const hash = /(?<![\w./:@#-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w/-])/g;
    const found = (text: string) => [...text.matchAll(hash)].map((m) => m[0]);
    assert.deepEqual(found('at commit 41b9a7c on the machine, and 95da360.'), ['41b9a7c', '95da360']);
    assert.deepEqual(found('01a1fcb6-1c2d id, 1000000 rows, a defaced word, #a1b2c3d4 anchor'), []);
  });

  test('the step parser reads continued lines, multi-line quotes and expectations', () => {
    const parsed = steps({
      line: 10,
      code: [
        'AUTH=(-H "a: b"',
        '      -H "c: d")',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell array, not a template
        'curl -s $API/x "${AUTH[@]}" \\',
        `  -d '{"data":{`,
        `  "type":"X"}}'`,
        '# → 201 {"data":{"id":"01a1…","type":"X","n":5,"ok":true}}',
        "curl -s -X POST $API/y -w '%{http_code}\\n'   # → 204",
        'curl -s $API/z | jq -r .status',
        '# → 200 Approved',
        'npx coffer clients list | jq -r .clients[0].name',
        '# → Acme',
        '# → 404 a second comment is prose',
      ].join('\n'),
    });
    assert.deepEqual(
      parsed.map((s) => [s.line, s.command.split('\n').length, s.status, s.members, s.word]),
      [
        [10, 2, undefined, [], undefined],
        [12, 3, 201, ['"type":"X"', '"n":5', '"ok":true'], undefined],
        [16, 1, 204, [], undefined],
        [17, 1, 200, [], 'Approved'],
        [19, 1, undefined, [], 'Acme'],
      ],
    );
  });

  test('the walk-throughs have steps to run, and every skipped block says why', async () => {
    for (const doc of RUN) {
      const markdown = await readFile(path.join(ROOT, doc), 'utf8');
      assert.ok(
        shellBlocks(markdown).some((b) => !b.skip),
        `${doc} has no shell block to run`,
      );
      for (const l of markdown.split('\n').filter((l) => l.includes('docs-test')))
        assert.match(l.trim(), SKIP, `${doc}: a skip marker is <!-- docs-test: skip: <why> -->`);
    }
  });
});

describe('the walk-throughs, against a sandbox', () => {
  let dir: string;
  let server: ServerProcess;

  before(async () => {
    for (const tool of ['jq', 'curl']) {
      const found = spawnSync(tool, ['--version']).status === 0;
      assert.ok(
        found,
        `the docs' walk-throughs use ${tool}: install it (Debian: apt-get install ${tool}; macOS: brew install ${tool})`,
      );
    }
    dir = await mkdtemp(path.join(tmpdir(), 'coffer-docs-'));
    // A sandbox as `npm start` makes it: generated secrets and a demo merchant in its data folder.
    server = await startServer({
      DATA_DIR: path.join(dir, 'data'),
      DATABASE_URL: await freshDatabaseUrl(),
      COFFER_ENV: 'sandbox',
      ADMIN_TOKEN: undefined,
      CARD_ENCRYPTION_KEY: undefined,
      WIDGET_SIGNING_KEY: undefined,
      LOG_LEVEL: 'warn',
    });
    await server.waitFor(/Stop with Ctrl-C/, 180_000);
  });
  after(async () => {
    server?.kill('SIGTERM');
    await server?.exited;
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  // Twice on one sandbox: every walk-through makes its own unique data, so a reader can run it again.
  for (const pass of [1, 2]) {
    test(`pass ${pass}: the banner's "Try it", then ${RUN.join(', ')}: every step does what its comment says`, {
      timeout: 600_000,
    }, async () => {
      await runDocs(server, dir);
    });
  }
});

/** The default addresses in the docs, and what they are for this sandbox. */
function substitutions(server: ServerProcess, dataDir: string): [string, string][] {
  const { api, card, pay, admin } = server.ports;
  return [
    ['localhost:3000', `localhost:${api}`],
    ['localhost:3001', `localhost:${card}`],
    ['localhost:3002', `localhost:${pay}`],
    ['localhost:3003', `localhost:${admin}`],
    ['.coffer/data', dataDir],
  ];
}

/** The banner's "Try it" command, as the sandbox printed it: it creates a user (201). */
function bannerStep(server: ServerProcess): Step & { doc: string } {
  const lines = server.stdout().split('\n');
  const start = lines.findIndex((l) => l.trim() === 'Try it:');
  assert.ok(start >= 0, `the banner has a "Try it":\n${server.stdout()}`);
  const end = lines.findIndex((l, i) => i > start && l.trim() === '');
  const command = lines
    .slice(start + 1, end)
    .map((l) => l.replace(/^ {2}/, ''))
    .join('\n');
  return { doc: 'the banner', line: start + 1, command, expected: true, status: 201, members: [] };
}

async function runDocs(server: ServerProcess, dir: string): Promise<void> {
  const dataDir = path.join(dir, 'data');
  const subs = substitutions(server, dataDir);
  const all: (Step & { doc: string })[] = [bannerStep(server)];
  for (const doc of RUN)
    for (const b of shellBlocks(await readFile(path.join(ROOT, doc), 'utf8')).filter((b) => !b.skip))
      for (const s of steps({ ...b, code: subs.reduce((code, [from, to]) => code.split(from).join(to), b.code) }))
        all.push({ ...s, doc });
  const out = await mkdtemp(path.join(dir, 'steps-'));
  // Each curl call records its response's status; each step its output and exit code. The
  // session stops at the first step that fails.
  const script = [
    'set -o pipefail',
    'curl() {',
    '  local headers; headers=$(mktemp)',
    '  command curl -D "$headers" "$@"; local rc=$?',
    `  echo "$DOCS_STEP $(awk '/^HTTP\\//{s=$2} END{print s}' "$headers")" >> "$DOCS_OUT/statuses"`,
    '  rm -f "$headers"; return $rc',
    '}',
    ...all.flatMap((s, i) => [
      `DOCS_STEP=${i}`,
      '{',
      s.command,
      `} > "$DOCS_OUT/${i}.out" 2> "$DOCS_OUT/${i}.err"`,
      `echo $? > "$DOCS_OUT/${i}.rc"; [ "$(cat "$DOCS_OUT/${i}.rc")" = 0 ] || exit 1`,
    ]),
  ].join('\n');
  await writeFile(path.join(out, 'script.sh'), script);
  const { ports } = server;
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !['DATABASE_URL', 'ADMIN_TOKEN', 'COFFER_ADMIN_URL'].includes(k)) env[k] = v;
  // The reader's shell next to `npm start`: the sandbox's data folder and ports (the CLI reads both).
  Object.assign(env, {
    DOCS_OUT: out,
    DATA_DIR: dataDir,
    PORT: String(ports.api),
    CARD_PORT: String(ports.card),
    PAY_PORT: String(ports.pay),
    ADMIN_PORT: String(ports.admin),
    CONSOLE_PORT: String(ports.console),
  });
  const bash = spawn('bash', [path.join(out, 'script.sh')], { cwd: ROOT, env, stdio: 'ignore', detached: true });
  const timer = setTimeout(() => process.kill(-bash.pid!, 'SIGKILL'), 540_000); // the session and whatever it started
  await new Promise((resolve) => bash.once('exit', resolve));
  clearTimeout(timer);

  const statuses = existsSync(path.join(out, 'statuses'))
    ? readFileSync(path.join(out, 'statuses'), 'utf8').trim().split('\n')
    : [];
  all.forEach((s, i) => {
    const file = (ext: string) =>
      existsSync(path.join(out, `${i}.${ext}`)) ? readFileSync(path.join(out, `${i}.${ext}`), 'utf8') : undefined;
    const rc = file('rc');
    const output = file('out') ?? '';
    const got = statuses.filter((l) => l.startsWith(`${i} `)).map((l) => Number(l.split(' ')[1]));
    const where = `${s.doc}:${s.line}\n${s.command}\n--- output:\n${output.slice(0, 2000)}\n--- stderr:\n${(file('err') ?? '').slice(0, 2000)}\n--- HTTP statuses: ${got.join(', ') || 'none'}`;
    assert.ok(rc !== undefined, `the session stopped before this step:\n${where}`);
    assert.equal(rc.trim(), '0', `the step failed (exit code ${rc.trim()}):\n${where}`);
    const last = got.at(-1);
    if (s.status !== undefined) assert.equal(last, s.status, `the step's comment says ${s.status}:\n${where}`);
    for (const [k, status] of got.entries()) {
      if (s.status !== undefined && k === got.length - 1) continue;
      assert.ok(
        status >= 200 && status < 300,
        `an HTTP call of the step answered ${status} (its comment shows no other status):\n${where}`,
      );
    }
    for (const member of s.members) {
      const found = member.endsWith('"')
        ? output.includes(member)
        : new RegExp(`${member.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w.])`).test(output);
      assert.ok(found, `the step's output lacks ${member}, which its comment shows:\n${where}`);
    }
    if (s.word !== undefined) assert.equal(output.trim(), s.word, `the step's comment shows ${s.word}:\n${where}`);
  });
}
