import { defineConfig } from '@playwright/test';

const accountPort = 3900;

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
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    },
  },
  webServer: {
    // The product exactly as `npm start` runs it, on a throw-away data directory.
    command: `npm run build:web && rm -rf test-results/e2e-data && DATA_DIR=test-results/e2e-data PORT=${accountPort} LOG_LEVEL=warn npx tsx scripts/start.ts`,
    url: `http://127.0.0.1:${accountPort}/api/v1/openapi.json`,
    timeout: 120_000,
    reuseExistingServer: false,
  },
});
