// What `npm start` prints once it listens: where everything is, and the sandbox's demo merchant.
// README.md shows it; src/listeners/landing.test.ts keeps the two the same.
import type { DemoMerchant } from './bootstrap.ts';
import type { Config } from './config.ts';

export function banner(
  config: Config,
  dbKind: string,
  demo: DemoMerchant | undefined,
  opts: { showAdminToken: boolean },
): string {
  const l = config.listeners;
  const on = (n: keyof typeof l) => config.enabledListeners.includes(n);
  const lines = [
    '',
    `Coffer is running (${config.environment}, ${dbKind === 'pglite' ? `embedded PostgreSQL in ${config.dataDir}` : 'PostgreSQL'}).`,
    '',
    ...(on('api') ? [`  API           ${l.api.publicUrl}/api/v1   (reference: ${l.api.publicUrl}/docs)`] : []),
    ...(on('card') ? [`  Secure cards  ${l.card.publicUrl}`] : []),
    ...(on('pay') ? [`  Widget host   ${l.pay.publicUrl}`] : []),
    ...(on('admin') ? [`  Admin         ${l.admin.publicUrl}/admin/v1`] : []),
    ...(on('console')
      ? [
          `  Console       ${l.console.publicUrl}   (sign in with a Client-ID and secret${
            config.console.operatorSignIn
              ? ', or the admin token)'
              : '; the operator, with the admin token, where CONSOLE_OPERATOR_SIGN_IN=true)'
          }`,
        ]
      : []),
  ];
  // Only a token the sandbox generated is printed: one from the environment stays out of the
  // terminal and of whatever collects stdout.
  if (config.environment === 'sandbox' && config.adminToken && opts.showAdminToken) {
    lines.push('', `  ADMIN_TOKEN   ${config.adminToken}   (kept in ${config.dataDir}/secrets.json)`);
  }
  if (demo) {
    lines.push('', `Demo merchant${demo.created ? ' (created now)' : ''}:`, `  Client-ID     ${demo.clientId}`);
    if (demo.secret) lines.push(`  Secret        ${demo.secret}`);
    lines.push(
      '',
      'Try it:',
      `  curl -s ${l.api.publicUrl}/api/v1/users \\`,
      `    -H 'Client-ID: ${demo.clientId}' -H 'Authorization: Bearer ${demo.secret ?? '<secret>'}' \\`,
      `    -H 'Content-Type: application/vnd.api+json' \\`,
      // A new e-mail address each time it is pasted, so it never collides with the README's walk-through or itself.
      `    -d '{"data":{"type":"User","attributes":{"email":"try-'$(date +%s)$RANDOM'@example.com"}}}'`,
    );
  }
  lines.push('', 'Stop with Ctrl-C.', '');
  return lines.join('\n');
}
