/**
 * `npm run docs`: regenerates the generated reference pages (docs/configuration.md and
 * .env.example, from the config schemas: scripts/config-reference.ts; docs/benchmarks.md, from
 * bench/results/: scripts/docs/benchmarks.ts).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { renderConfigurationPage, renderEnvExample } from './config-reference.js';
import { renderBenchmarksPage } from './docs/benchmarks.js';

const root = path.resolve(import.meta.dirname, '..');
for (const [file, text] of [
  ['docs/configuration.md', renderConfigurationPage()],
  ['.env.example', renderEnvExample()],
  ['docs/benchmarks.md', renderBenchmarksPage()],
] as const) {
  writeFileSync(path.join(root, file), text);
  console.log(`wrote ${file}`);
}
