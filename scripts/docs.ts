/**
 * `npm run docs`: regenerates the generated reference pages (docs/configuration.md and
 * .env.example, from the config schemas: scripts/config-reference.ts; docs/benchmarks.md, from
 * bench/results/: scripts/docs/benchmarks.ts, which also writes README.md's headline table;
 * docs/errors.md, from the error catalogue: scripts/docs/errors.ts).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { renderConfigurationPage, renderEnvExample } from './config-reference.js';
import { renderBenchmarksPage, renderReadme } from './docs/benchmarks.js';
import { renderErrorsPage } from './docs/errors.js';

const root = path.resolve(import.meta.dirname, '..');
for (const [file, text] of [
  ['docs/configuration.md', renderConfigurationPage()],
  ['.env.example', renderEnvExample()],
  ['docs/benchmarks.md', renderBenchmarksPage()],
  ['README.md', renderReadme(readFileSync(path.join(root, 'README.md'), 'utf8'))],
  ['docs/errors.md', renderErrorsPage()],
] as const) {
  writeFileSync(path.join(root, file), text);
  console.log(`wrote ${file}`);
}
