// docs/monitoring: the Prometheus alert rules and the Grafana dashboard parse, and name only
// metrics this process's registry has; docs/operations.md lists every Coffer metric.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { metricNames } from './metrics.ts';

const doc = (name: string) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');

/** The metric names an expression uses (ours and Node's), a histogram's series by its name. */
function metricsIn(expr: string): string[] {
  return [...expr.matchAll(/\b((?:coffer|nodejs|process)_[a-z0-9_]+)\b/g)].map((m) => m[1]!);
}

function assertKnown(where: string, expr: string): void {
  const names = new Set(metricNames());
  const used = metricsIn(expr);
  assert.ok(used.length > 0, `${where} names no metric: ${expr}`);
  for (const name of used) {
    const base = name.replace(/_(bucket|sum|count)$/, '');
    assert.ok(names.has(name) || names.has(base), `${where}: ${name} is not a metric of the registry`);
  }
}

describe('monitoring docs', () => {
  test('the alert rules parse and use only metrics that exist', () => {
    const rules = parse(doc('monitoring/alerts.yml')) as {
      groups: {
        name: string;
        rules: { alert: string; expr: string; labels: Record<string, string>; annotations: { summary: string } }[];
      }[];
    };
    const all = rules.groups.flatMap((g) => g.rules);
    assert.ok(all.length >= 10);
    for (const r of all) {
      assert.match(r.alert, /^Coffer[A-Za-z]+$/);
      assert.ok(r.annotations.summary, r.alert);
      assert.ok(r.labels.severity, r.alert);
      assertKnown(r.alert, r.expr);
    }
    assert.equal(new Set(all.map((r) => r.alert)).size, all.length, 'alert names are unique');
  });

  test('the Grafana dashboard parses and its panels use only metrics that exist', () => {
    const dash = JSON.parse(doc('monitoring/grafana-dashboard.json')) as {
      title: string;
      panels: { title: string; targets: { expr: string }[] }[];
    };
    assert.ok(dash.panels.length > 0);
    for (const p of dash.panels) for (const target of p.targets) assertKnown(p.title, target.expr);
  });

  test('docs/operations.md lists every Coffer metric', () => {
    const ops = doc('operations.md');
    for (const name of metricNames().filter((n) => n.startsWith('coffer_')))
      assert.ok(ops.includes(`\`${name}\``), `${name} is not in docs/operations.md`);
  });
});
