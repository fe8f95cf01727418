/**
 * Workspace files on loopback: upload and download of a 50 MiB file (MB/s, peak RSS growth of
 * the agent process) next to a bare `fs` stream copy of the same file as the ceiling, and the
 * tree of a 10,000-entry workspace. The agent runs as its own process (as in production) so that
 * its RSS is not mixed with the client's.
 *
 *   npx tsx bench/files.ts        → table on stdout, JSON in bench/results/files.json
 *
 * Targets (issue 7): ≥ 200 MB/s and RSS growth ≤ 20 MB either way; tree ≤ 100 ms.
 * MB = 10^6 bytes. Each figure is the median of RUNS runs; RSS growth is the worst run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { MAX_UPLOAD_BYTES } from '../server/agent/files/upload.js';
import { freePort } from '../server/common/net.js';
import { cpuMsOf, median } from './lib/harness.js';
import { download, mb, mbps, timed, upload, withRss as withRssOf } from './lib/transfer.js';

/** The agent's peak RSS growth while `work` runs. */
const withRss = async <T>(pid: number, work: () => Promise<T>) => {
  const { result, growth } = await withRssOf([pid], work);
  return { result, growth: growth[0]! };
};

const RUNS = 5;
const TREE_DIRS = 100;
const TREE_FILES_PER_DIR = 99; // 100 dirs + 9,900 files = 10,000 entries
const root = fileURLToPath(new URL('..', import.meta.url));

async function getJson(url: URL, secret: string, target: string): Promise<unknown> {
  const res = await fetch(new URL(target, url), { headers: { authorization: `Bearer ${secret}` } });
  if (!res.ok) throw new Error(`${target} ${res.status}`);
  return res.json();
}

async function startAgentProcess(workspace: string, secret: string): Promise<{ child: ChildProcess; url: URL }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'server/agent/main.ts')], {
    cwd: root,
    env: {
      ...process.env,
      AGENT_SECRET: secret,
      AGENT_WORKSPACE: workspace,
      AGENT_PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      HEARTBEAT_INTERVAL: '0',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = new URL(`http://127.0.0.1:${port}`);
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(new URL('/health', url))).ok) return { child, url };
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error('agent did not start');
}

async function main() {
  const scratch = await mkdtemp(path.join(tmpdir(), 'bench-files-'));
  const workspace = path.join(scratch, 'workspace');
  await mkdir(workspace);
  const secret = randomBytes(24).toString('hex');
  const size = MAX_UPLOAD_BYTES;
  const source = path.join(scratch, 'source.bin');
  await writeFile(source, randomBytes(size));

  const { child, url } = await startAgentProcess(workspace, secret);
  const pid = child.pid as number;
  try {
    // Ceiling: a bare fs stream copy of the same file, same disk.
    const ceiling: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const { ms } = await timed(() => pipeline(createReadStream(source), createWriteStream(path.join(scratch, 'copy.bin'))));
      ceiling.push(mbps(size, ms));
      await rm(path.join(scratch, 'copy.bin'));
    }

    // Warm-up (JIT, first-use allocations), not measured.
    await upload(url, secret, source, size, 'warm.bin');
    await download(url, secret, 'uploads/warm.bin');

    const up: number[] = [];
    const upRss: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const { result, growth } = await withRss(pid, () => timed(() => upload(url, secret, source, size, 'up.bin')));
      up.push(mbps(size, result.ms));
      upRss.push(growth);
      await rm(path.join(workspace, 'uploads/up.bin'));
    }
    const down: number[] = [];
    const downRss: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const { result, growth } = await withRss(pid, () => timed(() => download(url, secret, 'uploads/warm.bin')));
      if (result.result !== size) throw new Error(`downloaded ${result.result} bytes`);
      down.push(mbps(size, result.ms));
      downRss.push(growth);
    }

    // Tree of a 10,000-entry workspace (over HTTP, JSON included).
    await rm(path.join(workspace, 'uploads'), { recursive: true });
    for (let d = 0; d < TREE_DIRS; d++) {
      const dir = path.join(workspace, `dir${String(d).padStart(3, '0')}`);
      await mkdir(dir, { recursive: true });
      await Promise.all(Array.from({ length: TREE_FILES_PER_DIR }, (_, f) => writeFile(path.join(dir, `file${f}.txt`), 'x'.repeat(f))));
    }
    for (let i = 0; i < 3; i++) await getJson(url, secret, '/workspace/tree?max_depth=20'); // warm-up
    const treeMs: number[] = [];
    const treeCpuMs: number[] = [];
    let entries = 0;
    for (let i = 0; i < RUNS * 2; i++) {
      const cpuBefore = await cpuMsOf(pid);
      const { ms, result } = await timed(() => getJson(url, secret, '/workspace/tree?max_depth=20'));
      treeCpuMs.push((await cpuMsOf(pid)) - cpuBefore);
      treeMs.push(ms);
      entries = 0;
      const count = (nodes: Array<{ children?: unknown[] }>): void => {
        for (const node of nodes) {
          entries++;
          if (node.children) count(node.children as never);
        }
      };
      count((result as { tree: Array<{ children?: unknown[] }> }).tree);
    }

    const ceilingMbps = median(ceiling);
    const rows = [
      { case: 'upload 50 MiB', mbps: median(up), rssGrowthMB: mb(Math.max(...upRss)), ceilingMbps, ratio: median(up) / ceilingMbps },
      { case: 'download 50 MiB', mbps: median(down), rssGrowthMB: mb(Math.max(...downRss)), ceilingMbps, ratio: median(down) / ceilingMbps },
    ];
    const tree = { entries, medianMs: median(treeMs), maxMs: Math.max(...treeMs), agentCpuMedianMs: median(treeCpuMs) };
    const load = (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ');

    console.log(`\nworkspace files, loopback, ${RUNS} runs each (median MB/s, worst RSS growth; MB = 10^6 bytes)\n`);
    console.log('| case | MB/s | RSS growth (MB) | ceiling: fs stream copy (MB/s) | ratio | target |');
    console.log('|---|---:|---:|---:|---:|---|');
    for (const r of rows) {
      const ok = r.mbps >= 200 && r.rssGrowthMB <= 20;
      console.log(
        `| ${r.case} | ${r.mbps.toFixed(0)} | ${r.rssGrowthMB.toFixed(1)} | ${r.ceilingMbps.toFixed(0)} | ${(r.ratio * 100).toFixed(0)}% | ≥200 MB/s, ≤20 MB: ${ok ? 'met' : 'MISSED'} |`,
      );
    }
    console.log(
      `| tree, ${tree.entries} entries | ${tree.medianMs.toFixed(1)} ms wall (max ${tree.maxMs.toFixed(1)}), agent CPU ${tree.agentCpuMedianMs} ms | | | | ≤100 ms: ${tree.medianMs <= 100 ? 'met' : 'MISSED'} |`,
    );
    console.log(`\nload average at the end: ${load} (${(await readFile('/proc/cpuinfo', 'utf8')).split('processor').length - 1} cores)`);

    const out = path.join(root, 'bench/results/files.json');
    await mkdir(path.dirname(out), { recursive: true });
    await writeFile(
      out,
      `${JSON.stringify({ date: new Date().toISOString(), node: process.version, loadavg: load, fileBytes: size, runs: RUNS, transfers: rows, tree, raw: { ceiling, up, upRss, down, downRss, treeMs, treeCpuMs } }, null, 2)}\n`,
    );
    console.log(`\nwritten to ${path.relative(process.cwd(), out)}`);
    await stat(out);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await rm(scratch, { recursive: true, force: true });
  }
}

await main();
