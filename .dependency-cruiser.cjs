// The layers of src/, lowest first (docs/architecture.md#layers). A file imports only from its
// own layer or lower ones; there are no cycles; a module's routes.ts is registered, never used
// as a library. src/test/layers.test.ts runs these rules and the module-pair check.
const BASE = '^src/((config|settings|addresses|clock|ids|timestamps|log)\\.ts$|crypto/|observability/)';
const DB = '^src/db/';
const CORE = '^src/(ledger|providers|jobs)/';
const HTTP = '^src/http/';
const MODULES = '^src/(modules|console)/';
const TOP = '^src/((listeners|cli)/|(app|context|main|bootstrap)\\.ts$)';

const above = (name, from, higher) => ({
  name,
  severity: 'error',
  from: { path: from },
  to: { path: higher, dependencyTypesNot: ['type-only'] },
});
const typesAbove = (name, from, higher) => ({
  name: `${name}-types`,
  severity: 'error',
  from: { path: from },
  to: { path: higher, dependencyTypes: ['type-only'] },
});

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
    above('base-imports-nothing-above', BASE, [DB, CORE, HTTP, MODULES, TOP]),
    typesAbove('base-imports-nothing-above', BASE, [DB, CORE, HTTP, MODULES, TOP]),
    above('db-below-the-rest', DB, [CORE, HTTP, MODULES, TOP]),
    typesAbove('db-below-the-rest', DB, [CORE, HTTP, MODULES, TOP]),
    above('core-below-http', CORE, [HTTP, MODULES, TOP]),
    typesAbove('core-below-http', CORE, [HTTP, MODULES, TOP]),
    above('http-below-modules', HTTP, [MODULES, TOP]),
    typesAbove('http-below-modules', HTTP, [MODULES, TOP]),
    {
      name: 'modules-below-listeners',
      comment: 'modules may name the AppContext type (src/context.ts), nothing else above them',
      severity: 'error',
      from: { path: MODULES },
      to: { path: TOP, pathNot: '^src/context\\.ts$' },
    },
    {
      name: 'no-route-file-as-library',
      comment: "a module's routes.ts is declared in its module.ts, never imported by another file",
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(listeners/|app\\.ts$|modules/[^/]+/module\\.ts$)' },
      to: { path: '^src/modules/[^/]+/routes\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['node_modules', '\\.test\\.ts$', '^src/test/', '^src/widget/'] },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
  },
};
