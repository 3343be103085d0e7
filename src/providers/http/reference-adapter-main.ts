// `npm run provider-adapter`: the reference adapter as a process (ADAPTER_HOST, ADAPTER_PORT,
// PROVIDER_SIGNING_SECRET, ADAPTER_SETTLE_MS, ADAPTER_KYC_DECISION_MS). A starting point for an
// operator's own adapter and a stand-in for a sandbox; it simulates, so never for live.
import { ConfigError, loadReferenceAdapterConfig } from '../../config.ts';
import { ReferenceAdapter } from './reference-adapter.ts';

let config: ReturnType<typeof loadReferenceAdapterConfig>;
try {
  config = loadReferenceAdapterConfig();
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`provider-adapter: ${err.message}\n`);
  process.exit(78);
}
const adapter = new ReferenceAdapter({
  signingSecret: config.signingSecret,
  settleMs: config.settleMs,
  kycDecisionMs: config.kycDecisionMs,
});
const url = await adapter.listen(config.port, config.host);
process.stdout.write(
  `Reference provider adapter on ${url} (simulated providers: it moves no money; never point live at it).\n` +
    `Point every *_PROVIDER_URL at it, with the same PROVIDER_SIGNING_SECRET.\n`,
);
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void adapter.close().then(() => process.exit(0)));
