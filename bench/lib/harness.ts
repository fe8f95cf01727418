/**
 * What every bench shares: servers as child processes (as in production: their CPU and RSS are
 * their own), waiting for them, stopping them, RSS from /proc, an autocannon run as one row, and
 * medians.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';

export const root = fileURLToPath(new URL('../..', import.meta.url));

export interface Row {
  name: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  total: number;
  non2xx: number;
  errors: number;
}

/** Node flags for every server a bench starts, e.g. `BENCH_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/prof"`. */
export const benchNodeOptions = (): string[] => (process.env.BENCH_NODE_OPTIONS ?? '').split(' ').filter(Boolean);

/** `script` of `tree` (this checkout, or a baseline's: bench/lib/baseline.ts) run through tsx as a child process. */
export function spawnServer(script: string, args: string[], env: Record<string, string>, tree = root): ChildProcess {
  return fork(path.join(tree, script), args, {
    cwd: tree,
    execArgv: [...benchNodeOptions(), '--import', 'tsx'],
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

/**
 * The script that runs an agent of `tree`'s build: its bundle's entry (server/common/build.ts), or,
 * in a baseline from before the bundle, the per-file tree's main.js.
 */
export function agentScript(tree: string): string {
  const boot = path.join(tree, 'dist/agent/boot.cjs');
  return existsSync(boot) ? boot : path.join(tree, 'dist/server/agent/main.js');
}

/** The machine's 1, 5 and 15 minute load averages, to print beside timings taken on a shared machine. */
export const loadAverage = (): number[] => loadavg().map((x) => Math.round(x * 100) / 100);

/** Polls `url` until it answers 2xx; `intervalMs` between tries (small where the wait itself is timed). */
export async function waitForHttp(url: string, timeoutMs = 60_000, intervalMs = 200): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not up yet
    }
    if (Date.now() > until) throw new Error(`${url} did not come up`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export const stop = (child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM') =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill(signal);
  });

export async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}

/** A process's parent and the CPU time (user + system) it has used, in ms (/proc/<pid>/stat, 100 ticks/s); undefined once it is gone. */
export async function processStat(pid: number | string): Promise<{ parent: string; cpuMs: number } | undefined> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')).split(') ')[1]?.split(' ') ?? [];
  return fields.length ? { parent: fields[1] ?? '', cpuMs: (Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) * 10 } : undefined;
}

/** CPU time (user + system) a running process has used, in ms. */
export async function cpuMsOf(pid: number): Promise<number> {
  const stat = await processStat(pid);
  if (!stat) throw new Error(`process ${pid} is gone`);
  return stat.cpuMs;
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

export async function load(name: string, opts: autocannon.Options & { quiet?: boolean }): Promise<Row> {
  const result = await autocannon({ connections: 32, duration: 5, ...opts });
  const row: Row = {
    name,
    requestsPerSecond: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
  if (!opts.quiet) printRow(row);
  return row;
}

/** A run's row as `load` prints it. */
export function printRow<R extends Row>(row: R): R {
  console.log(
    `  ${row.name}: ${row.requestsPerSecond}/s, p50 ${row.p50} ms, p99 ${row.p99} ms${row.non2xx || row.errors ? ` (non-2xx ${row.non2xx}, errors ${row.errors})` : ''}`,
  );
  return row;
}

/** The row whose req/s is the median of `rows` (its latencies come with it). */
export function medianRow(name: string, rows: Row[]): Row & { runs: number[] } {
  const sorted = [...rows].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond);
  const mid = sorted[Math.floor(sorted.length / 2)]!;
  return {
    ...mid,
    name,
    runs: rows.map((r) => r.requestsPerSecond),
    non2xx: rows.reduce((n, r) => n + r.non2xx, 0),
    errors: rows.reduce((n, r) => n + r.errors, 0),
  };
}

export function table(headers: string[], rows: Array<Array<string | number>>): string {
  const align = headers.map((_, i) => (i === 0 ? '---' : '---:'));
  return [`| ${headers.join(' | ')} |`, `|${align.join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/** Writes `data` as bench/results/<file> (pretty JSON). */
export async function writeResults(file: string, data: unknown): Promise<void> {
  await mkdir(path.join(root, 'bench/results'), { recursive: true });
  await writeFile(path.join(root, 'bench/results', file), `${JSON.stringify(data, null, 2)}\n`);
}

/**
 * A bench module run on its own (`npx tsx bench/x.ts`), not imported by bench/run.ts: run it,
 * print its tables, write bench/results/<file>.
 */
export async function runIfEntry<R>(moduleUrl: string, file: string, bench: () => Promise<R>, print: (results: R) => void): Promise<void> {
  if (!process.argv[1] || moduleUrl !== pathToFileURL(process.argv[1]).href) return;
  const started = performance.now();
  const results = await bench();
  print(results);
  await writeResults(file, results);
  console.log(`\nwritten: bench/results/${file} (${Math.round((performance.now() - started) / 1000)} s)`);
}
