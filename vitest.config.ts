import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

// `npm test` runs every suite but the long ones; `npm run test:reliability` and
// `npm run test:security` run theirs alone (VITEST_SUITE=reliability|security).
const suite = process.env.VITEST_SUITE;
const separate = ['test/reliability/**', 'test/security/**'];

export default defineConfig({
  // tsconfig's `paths` (the shared contracts), which vite does not read by itself.
  resolve: { alias: [{ find: /^@contracts\//, replacement: fileURLToPath(new URL('contracts/', import.meta.url)) }] },
  test: {
    include: suite ? [`test/${suite}/**/*.test.ts`] : ['test/**/*.test.ts'],
    exclude: suite ? [...configDefaults.exclude] : [...configDefaults.exclude, ...separate],
    // dist/ current before any test starts an agent (test/support/global-setup.ts).
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    // Two cores: more workers than that only makes servers under test fight for CPU.
    maxWorkers: 2,
    testTimeout: suite ? 300_000 : 30_000,
    hookTimeout: 60_000,
    env: { LOG_LEVEL: 'silent' },
  },
});
