/**
 * The two identity providers of the Playwright stack, on fixed loopback ports (a webServer
 * entry in playwright.config.ts starts this before the product, which it is configured with).
 * Same providers as the vitest suites: test/support/oidc-providers.ts.
 */
import { startProviderA, startProviderB } from '../../test/support/oidc-providers.js';

const accountUrl = process.env.E2E_ACCOUNT_URL ?? 'http://127.0.0.1:3900';
const client = (provider: string) => ({
  clientId: process.env.E2E_CLIENT_ID ?? 'web-client',
  clientSecret: process.env.E2E_CLIENT_SECRET ?? 'web-secret-0123456789',
  redirectUris: [`${accountUrl}/api/v1/auth/oauth/${provider}/callback`],
});

const a = await startProviderA({ port: Number(process.env.E2E_IDPA_PORT ?? 3910), clients: [client('idpa')] });
const b = await startProviderB({ port: Number(process.env.E2E_IDPB_PORT ?? 3911), clients: [client('idpb')] });
console.log(`e2e providers: A ${a.issuer}, B ${b.url}`);

const stop = () => {
  void Promise.all([a.close(), b.close()]).finally(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
