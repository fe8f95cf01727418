import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';

// Three suites: `unit` (unit and integration, the default of `npx vitest run`), and the long
// `security` and `reliability` suites. VITEST_SUITE picks one (`npm run test:security`), or `all`:
// `npm test` runs all three in one vitest run, so the two workers never idle at one suite's tail
// while the next waits to start. A fourth, `kube` (a real Kubernetes control plane and the test
// kubelet, test/kube/), is not part of `all`: it runs inside a private network namespace
// (`npm run test:kube`: scripts/kube/in-netns.sh with VITEST_SUITE=kube).
const SUITES = {
  unit: {
    include: ['test/**/*.test.ts'],
    exclude: [...configDefaults.exclude, 'test/reliability/**', 'test/security/**', 'test/kube/**'],
    testTimeout: 30_000,
  },
  security: { include: ['test/security/**/*.test.ts'], exclude: [...configDefaults.exclude], testTimeout: 300_000 },
  reliability: { include: ['test/reliability/**/*.test.ts'], exclude: [...configDefaults.exclude], testTimeout: 300_000 },
  kube: {
    include: ['test/kube/**/*.test.ts'],
    exclude: [...configDefaults.exclude],
    testTimeout: 120_000,
    // One control plane for the run (test/support/kube/shared.ts).
    globalSetup: ['test/support/global-setup.ts', 'test/support/kube/global-setup.ts'],
  },
};
type Suite = keyof typeof SUITES;
const chosen = process.env.VITEST_SUITE ?? 'unit';
if (chosen !== 'all' && !(chosen in SUITES)) throw new Error(`VITEST_SUITE must be one of ${Object.keys(SUITES).join(', ')} or all`);
const suites = chosen === 'all' ? (Object.keys(SUITES) as Suite[]).filter((s) => s !== 'kube') : [chosen as Suite];

// A worker runs file after file on one module graph (isolate: false): importing the services and
// warming them up (Prisma, PGlite's Wasm, zod schemas) costs each fresh worker seconds of CPU,
// which 120 files paid once each (test/account/ alone: 142 → 76 CPU-seconds; docs/development.md,
// "The test run's budget"). Test files share nothing else: each starts its own servers on their
// own ports and directories. A file that mocks a module (vi.mock) needs the module graph to
// itself, and gets it: those files run in an isolated project of their own, found here.
const MOCKS_A_MODULE = /\bvi\.(mock|doMock)\(/;
const testDir = fileURLToPath(new URL('test/', import.meta.url));
const ownModuleGraph = readdirSync(testDir, { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.test.ts') && MOCKS_A_MODULE.test(readFileSync(`${testDir}${file}`, 'utf8')))
  .map((file) => `test/${file}`);
/** The suite a test file belongs to: its folder's, or `unit`. */
const suiteOf = (file: string): Suite => (['security', 'reliability', 'kube'] as const).find((suite) => file.startsWith(`test/${suite}/`)) ?? 'unit';
const projects = suites.flatMap((name): TestProjectInlineConfiguration[] => {
  const isolated = ownModuleGraph.filter((file) => suiteOf(file) === name);
  const { exclude, ...settings } = SUITES[name];
  return [
    { extends: true, test: { name, ...settings, exclude: [...exclude, ...isolated], isolate: false } },
    // Named to sort first (vitest runs projects in name order): few and short files.
    ...(isolated.length ? [{ extends: true as const, test: { name: `isolated ${name}`, ...settings, include: isolated, isolate: true } }] : []),
  ];
});

export default defineConfig({
  // tsconfig's `paths` (the shared contracts), which vite does not read by itself.
  resolve: { alias: [{ find: /^@contracts\//, replacement: fileURLToPath(new URL('contracts/', import.meta.url)) }] },
  test: {
    // dist/ current before any test starts an agent (test/support/global-setup.ts).
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    // Two cores: more workers than that only makes servers under test fight for CPU.
    maxWorkers: 2,
    hookTimeout: 60_000,
    env: { LOG_LEVEL: 'silent' },
    projects,
  },
});
