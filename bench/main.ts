// npm run bench -- <command or scenarios> …: `compare` (compare.ts), `fixed-rate` (fixed-rate.ts)
// and `report` (report.ts) are commands of their own; anything else is run.ts's scenarios.
const commands: Record<string, () => Promise<{ main: (args: string[]) => Promise<void> }>> = {
  compare: () => import('./compare.ts'),
  'fixed-rate': () => import('./fixed-rate.ts'),
  report: () => import('./report.ts'),
};
const command = commands[process.argv[2] ?? ''];
if (command) await (await command()).main(process.argv.slice(3));
else await import('./run.ts');
