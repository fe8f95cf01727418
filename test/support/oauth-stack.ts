/**
 * An account service wired to both local providers (test/support/oidc-providers.ts), plus the
 * walk through a provider's pages that a person would make, at HTTP level.
 */
import { startProviderA, startProviderB, type ProviderA, type ProviderB, type TestClient } from './oidc-providers.js';
import { TestBrowser, type Hop } from './browser.js';
import { freePort, startTestAccount, type TestAccount } from './servers.js';

export const WEB_CLIENT: Omit<TestClient, 'redirectUris'> = { clientId: 'web-client', clientSecret: 'web-secret-0123456789' };
export const MOBILE_CLIENT_IDS = ['ios-app', 'android-app'];

export interface OAuthStack {
  account: TestAccount;
  api: string;
  a: ProviderA;
  b: ProviderB;
  stop(): Promise<void>;
}

/** The IDPA_* and IDPB_* settings for an account service at `baseUrl` using these providers. */
export function providerEnv(a: { issuer: string }, b: ProviderB): Record<string, string> {
  return {
    IDPA_ISSUER: a.issuer,
    IDPA_CLIENT_ID: WEB_CLIENT.clientId,
    IDPA_CLIENT_SECRET: WEB_CLIENT.clientSecret,
    IDPA_MOBILE_CLIENT_IDS: MOBILE_CLIENT_IDS.join(','),
    IDPB_AUTHORIZE_URL: b.authorizeUrl,
    IDPB_TOKEN_URL: b.tokenUrl,
    IDPB_USER_URL: b.userUrl,
    IDPB_EMAILS_URL: b.emailsUrl,
    IDPB_CLIENT_ID: WEB_CLIENT.clientId,
    IDPB_CLIENT_SECRET: WEB_CLIENT.clientSecret,
    OAUTH_PROVIDER_TIMEOUT_SECONDS: '2',
  };
}

export async function startOAuthStack(kind: 'pglite' | 'postgres' = 'pglite', env: Record<string, string> = {}): Promise<OAuthStack> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const client = (p: string): TestClient => ({ ...WEB_CLIENT, redirectUris: [`${base}/api/v1/auth/oauth/${p}/callback`] });
  const a = await startProviderA({ clients: [client('idpa')] });
  const b = await startProviderB({ clients: [client('idpb')] });
  const account = await startTestAccount(kind, { PORT: String(port), ...providerEnv(a, b), ...env });
  return {
    account,
    api: `${account.url}/api/v1`,
    a,
    b,
    async stop() {
      await account.stop();
      await a.close();
      await b.close();
    },
  };
}

const isLanding = (url: string) => new URL(url).pathname === '/auth/callback';

/**
 * From an authorization URL through the provider's login (and consent, for A) to the redirect
 * that lands on the web client's /auth/callback. `deny` clicks Cancel instead.
 * `stopAtCallback` stops before our callback is called (to tamper with or replay it).
 */
export async function throughProvider(
  browser: TestBrowser,
  provider: 'idpa' | 'idpb',
  authorizationUrl: string,
  opts: { login?: string; deny?: boolean; stopAtCallback?: boolean } = {},
): Promise<Hop> {
  const stopAt = (url: string) => (opts.stopAtCallback ? url.includes(`/auth/oauth/${provider}/callback`) : isLanding(url));
  let page = await browser.follow(authorizationUrl, stopAt);
  for (let step = 0; step < 4 && !page.location; step++) {
    if (opts.deny) return browser.follow(browser.link(page, /Cancel/), stopAt);
    page = /name="login"/.test(page.body)
      ? await browser.submit(page, { login: opts.login ?? 'alice', password: 'any' }, stopAt)
      : await browser.submit(page, {}, stopAt);
  }
  if (!page.location) throw new Error(`stuck at ${page.url} (${page.status}): ${page.body.slice(0, 300)}`);
  return page;
}

/** `GET /auth/oauth/{provider}` → provider → callback → `{code | error}` of the landing URL. */
export async function signInThroughBrowser(
  stack: OAuthStack,
  provider: 'idpa' | 'idpb',
  opts: { login?: string; deny?: boolean; browser?: TestBrowser; startUrl?: string } = {},
): Promise<{ code: string | null; error: string | null; browser: TestBrowser; landing: string; cookie: string }> {
  const browser = opts.browser ?? new TestBrowser();
  const landing = await throughProvider(browser, provider, opts.startUrl ?? `${stack.api}/auth/oauth/${provider}`, opts);
  const url = new URL(landing.location as string);
  // The exchange cookie the callback set: POST /auth/exchange needs it (the code is bound to this browser).
  const cookie = `oauth_exchange=${browser.cookies.get('oauth_exchange')?.value ?? ''}`;
  return { code: url.searchParams.get('code'), error: url.searchParams.get('error'), browser, landing: url.href, cookie };
}
