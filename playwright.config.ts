import { defineConfig } from '@playwright/test';

// E2E_PORT_BASE moves every port of the run (default 3900), so two runs on one machine do not collide.
const portBase = Number(process.env.E2E_PORT_BASE ?? 3900);
const accountPort = portBase;
// Local identity providers for the OAuth specs (e2e/support/providers.ts) and the product's settings for them.
const idpaPort = portBase + 10;
const idpbPort = portBase + 11;
// The scripted model the product's agents talk to (e2e/support/model.ts).
const modelPort = portBase + 12;
// The fake Bot API for the Messenger page (e2e/support/telegram.ts).
const telegramPort = portBase + 13;
// A page and a fake SearXNG for the agents' web tools (e2e/support/web.ts).
const webPort = portBase + 14;
const client = { id: 'web-client', secret: 'web-secret-0123456789' };
const providerEnv = {
  IDPA_ISSUER: `http://127.0.0.1:${idpaPort}`,
  IDPA_CLIENT_ID: client.id,
  IDPA_CLIENT_SECRET: client.secret,
  IDPB_AUTHORIZE_URL: `http://127.0.0.1:${idpbPort}/login/oauth/authorize`,
  IDPB_TOKEN_URL: `http://127.0.0.1:${idpbPort}/login/oauth/access_token`,
  IDPB_USER_URL: `http://127.0.0.1:${idpbPort}/user`,
  IDPB_EMAILS_URL: `http://127.0.0.1:${idpbPort}/user/emails`,
  IDPB_CLIENT_ID: client.id,
  IDPB_CLIENT_SECRET: client.secret,
  // Short enough for e2e/oauth.spec.ts to wait out an expired code; the product's default is the spec's 60 s.
  AUTH_CODE_TTL_SECONDS: '8',
  MODEL: `openai-compatible:http://127.0.0.1:${modelPort}/v1#scripted`,
  TELEGRAM_API_ROOT: `http://127.0.0.1:${telegramPort}`,
  // Browsers refuse passkeys on an IP address: e2e/account.spec.ts uses the web client at localhost for them.
  WEBAUTHN_RP_ID: 'localhost',
  // The rate-limit spec counts as a client of its own (X-Forwarded-For), so its spent bucket does
  // not refuse the next spec's mail.
  TRUST_PROXY: 'loopback',
  WEBAUTHN_ORIGIN: `http://localhost:${accountPort}`,
  // e2e/admin.spec.ts registers a webhook endpoint on this machine (refused by default: docs/admin.md).
  WEBHOOK_ALLOW_PRIVATE: '1',
  // e2e/web-tools.spec.ts: the agents search the fake SearXNG and may fetch from its port, as if it were public.
  WEB_SEARCH: `searxng:http://127.0.0.1:${webPort}`,
  AGENT_WEB_TEST_PUBLIC: `127.0.0.1:${webPort}`,
  // e2e/connectors.spec.ts adds MCP servers (and their authorization server) it starts on loopback
  // (refused by default: docs/connectors.md).
  CONNECTORS_ALLOW_PRIVATE: '1',
  // e2e/admin.spec.ts and e2e/axe-pages.spec.ts sign in as these addresses and are admins at once
  // (each enrols its own authenticator app: ADMIN_REQUIRE_2FA).
  ADMIN_EMAILS: 'operator@e2e.example,auditor@e2e.example',
};

export default defineConfig({
  testDir: 'e2e',
  testMatch: '**/*.spec.ts',
  timeout: 60_000,
  workers: 1,
  reporter: [['list']],
  outputDir: 'test-results',
  use: {
    baseURL: `http://127.0.0.1:${accountPort}`,
    screenshot: 'only-on-failure',
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
  webServer: [
    {
      command: 'npx tsx e2e/support/providers.ts',
      url: `http://127.0.0.1:${idpaPort}/.well-known/openid-configuration`,
      timeout: 120_000,
      reuseExistingServer: false,
      env: {
        E2E_ACCOUNT_URL: `http://127.0.0.1:${accountPort}`,
        E2E_IDPA_PORT: String(idpaPort),
        E2E_IDPB_PORT: String(idpbPort),
        E2E_CLIENT_ID: client.id,
        E2E_CLIENT_SECRET: client.secret,
      },
    },
    {
      command: 'npx tsx e2e/support/model.ts',
      port: modelPort,
      timeout: 60_000,
      reuseExistingServer: false,
      env: { E2E_MODEL_PORT: String(modelPort), E2E_WEB_PORT: String(webPort) },
    },
    {
      command: 'npx tsx e2e/support/web.ts',
      port: webPort,
      timeout: 60_000,
      reuseExistingServer: false,
      env: { E2E_WEB_PORT: String(webPort) },
    },
    {
      command: 'npx tsx e2e/support/telegram.ts',
      port: telegramPort,
      timeout: 60_000,
      reuseExistingServer: false,
      env: { E2E_TELEGRAM_PORT: String(telegramPort) },
    },
    {
      // The product exactly as `npm start` runs it (compiled, built first when stale), on a throw-away data directory.
      command: `rm -rf test-results/e2e-data && DATA_DIR=test-results/e2e-data PORT=${accountPort} LOG_LEVEL=warn npx tsx scripts/start.ts`,
      url: `http://127.0.0.1:${accountPort}/api/v1/openapi.json`,
      timeout: 120_000,
      reuseExistingServer: false,
      env: providerEnv,
    },
  ],
});
