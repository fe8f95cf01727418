/**
 * A baseline for side-by-side benches: an earlier commit's tree, extracted with `git archive`
 * into a temporary directory with this tree's node_modules linked in and its own Prisma client
 * generated (and, when asked, its own compiled build). Kept for the next run, per commit.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { root } from './harness.js';

/**
 * The agent as it ran before its bundle (issue 42): what bench/agents.ts, bench/sandbox.ts and
 * bench/kube.ts start beside this build. BENCH_BASELINE names another commit.
 */
export const AGENT_BASELINE = process.env.BENCH_BASELINE ?? 'f1d848b';

const git = (args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();

/** The short hash a bench reports for `ref`. */
export const shortCommit = (ref: string) => git(['rev-parse', '--short', `${ref}^{commit}`]);

/**
 * `inside`: a directory under this checkout to put it in instead of the temporary directory (the
 * Kubernetes test kubelet's pods see this checkout, not the host's /tmp).
 */
export async function baselineTree(ref: string, options: { build: boolean; inside?: string }): Promise<string> {
  const sha = git(['rev-parse', `${ref}^{commit}`]);
  const dir = path.join(options.inside ? path.join(root, options.inside) : tmpdir(), `bench-baseline-${sha.slice(0, 12)}`);
  const ready = path.join(dir, '.bench-ready');
  const built = path.join(dir, 'dist', '.build-stamp');
  if (existsSync(ready) && (!options.build || existsSync(built))) return dir;
  const run = (script: string, args: string[]) =>
    execFileSync(process.execPath, ['--import', 'tsx', script, ...args], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  if (!existsSync(ready)) {
    console.log(`preparing the baseline (${sha.slice(0, 12)}) in ${dir}`);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    execFileSync('tar', ['-x', '-C', dir], { input: execFileSync('git', ['archive', '--format=tar', sha], { cwd: root, maxBuffer: 1 << 30 }) });
    await symlink(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
    run('scripts/db.ts', ['generate']);
    await writeFile(ready, `${sha}\n`);
  }
  if (options.build && !existsSync(built)) run('scripts/build.ts', ['--server']);
  return dir;
}
