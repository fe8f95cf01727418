/**
 * `npm run bench:exec`: what one `exec` call costs in a sandboxed agent. A real agent sandbox
 * (`sandboxArgs`, as the launcher builds it, without a cgroup) runs node with the agent's own
 * `runShell` (the compiled build), which runs `true` in the exec sandbox (`EXEC_SANDBOX_ARGS`, and
 * with AGENT_EXEC_NETWORK=allowlist `EXEC_SANDBOX_ARGS_WITH_EGRESS`) CALLS times; medians and p90
 * of the call, from spawn to exit, are printed. Compare a branch against its base by running it
 * in each checkout.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { DIST_DIR } from '../server/common/build.js';
import { loadAccountConfig } from '../server/account/config.js';
import {
  EXEC_SANDBOX_ARGS,
  EXEC_SANDBOX_ARGS_WITH_EGRESS,
  SANDBOX_ARGS_FD,
  sandboxArgs,
  sandboxArgsData,
} from '../server/account/agents/provisioners/local/sandbox.js';
import { buildIfStale } from '../scripts/build.js';
import { median, table, writeResults } from './lib/harness.js';

const CALLS = Number(process.env.BENCH_CALLS ?? (process.env.BENCH_QUICK === '1' ? 20 : 60));

/** Runs inside the agent's sandbox: CALLS exec calls of `true`, each one's milliseconds as JSON. */
const INSIDE = `
const { runShell } = await import(${JSON.stringify(path.join(DIST_DIR, 'server/agent/tools/shell.js'))});
const sandbox = JSON.parse(process.env.BENCH_EXEC_SANDBOX);
const times = [];
for (let i = 0; i < ${CALLS}; i++) {
  const started = performance.now();
  const result = await runShell('true', { cwd: '/workspace', timeoutMs: 10000, signal: new AbortController().signal, sandbox, maxFileBytes: 1 << 30 });
  if (result.exit_code !== 0) throw new Error('exec failed: ' + result.output);
  times.push(performance.now() - started);
}
process.stdout.write(JSON.stringify(times));
`;

async function execCalls(execArgs: string[]): Promise<number[]> {
  const { bwrap, tmpBytes } = loadAccountConfig({}).agentLauncher;
  const base = await mkdtemp(path.join(tmpdir(), 'bench-exec-'));
  const mounts = { workspace: path.join(base, 'workspace'), stateDir: path.join(base, 'state'), runDir: path.join(base, 'run') };
  await Promise.all(Object.values(mounts).map((dir) => mkdir(dir)));
  try {
    const child = spawn(bwrap, ['--args', String(SANDBOX_ARGS_FD), '--', process.execPath, '--input-type=module', '-e', INSIDE], {
      env: { PATH: '/usr/bin:/bin', BENCH_EXEC_SANDBOX: JSON.stringify([bwrap, ...execArgs]) },
      stdio: ['ignore', 'pipe', 'inherit', 'pipe'],
    });
    (child.stdio[SANDBOX_ARGS_FD] as Writable).end(sandboxArgsData(sandboxArgs(mounts, { tmpBytes })));
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (code !== 0) throw new Error(`the agent sandbox exited with ${code}`);
    return JSON.parse(out) as number[];
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}

const p90 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)] as number;

await buildIfStale({ web: false });
const samples = { none: await execCalls(EXEC_SANDBOX_ARGS), allowlist: await execCalls(EXEC_SANDBOX_ARGS_WITH_EGRESS) };
const rows = Object.entries(samples).map(([mode, times]) => [mode, median(times).toFixed(1), p90(times).toFixed(1)]);
console.log(table([`AGENT_EXEC_NETWORK (${CALLS} calls of \`true\`)`, 'median ms', 'p90 ms'], rows));
await writeResults('exec.json', { calls: CALLS, samples, rows });
