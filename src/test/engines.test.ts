// Every locked package runs on the oldest Node.js that package.json's `engines` accepts, so
// `npm ci` on it prints no EBADENGINE. A dependency that moves past it is pinned back through
// package.json's `overrides` (content-disposition 2 for @fastify/static, cookie 1 for
// light-my-request: their newer majors need Node 22).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import semver from 'semver';

const read = (file: string) => JSON.parse(readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8'));

test("every package in package-lock.json accepts the oldest Node.js of package.json's engines", () => {
  const oldest = semver.minVersion(read('package.json').engines.node)!.version;
  const packages = read('package-lock.json').packages as Record<string, { engines?: { node?: string } }>;
  const refusing = Object.entries(packages)
    .filter(([name, p]) => name !== '' && p.engines?.node && !semver.satisfies(oldest, p.engines.node))
    .map(([name, p]) => `${name} needs node ${p.engines!.node}`);
  assert.deepEqual(refusing, [], `on node ${oldest}`);
});
