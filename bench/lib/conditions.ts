/**
 * What else happened while a run was measured, so a noisy round can be explained rather than
 * averaged away: the machine's 1-minute load average (other processes on the two cores), whether
 * PostgreSQL ran a checkpoint (the server-wide flush of dirty pages, every 5 minutes by default,
 * that slows every writer for its duration), the CPU the measured server spent — its own
 * process and the PostgreSQL backends serving its database — which, per request, moves far less
 * with the machine's load than requests per second do, and the CPU our local agents spent during
 * the run, whichever side it measured: an agent's V8 gives its start-up heap back in a few
 * collections 5–30 s after it became ready (≈ 100–200 ms of CPU each time, on its main and helper
 * threads), so the agents a run of sign-ins claimed and the pool started again spend CPU in later
 * runs, of any side (docs/performance.md).
 */
import { readdir } from 'node:fs/promises';
import { loadavg } from 'node:os';
import pg from 'pg';
import { cpuMsOf, processStat } from './harness.js';

export interface Conditions {
  loadAverage: number;
  checkpoint: boolean;
  /** CPU ms of the server and its database's backends during the run (when `around` was told whose). */
  cpuMs?: number;
  /** CPU ms our local agents (the processes under `agentsOf`) spent during the run. */
  agentsCpuMs?: number;
}

/**
 * CPU ms so far of each process below `root` (not `root` itself), by pid. Every process's stat is
 * read, since finding a process's children needs /proc/<pid>/task/<tid>/children, which not every
 * kernel has (this machine's does not).
 */
async function descendantsCpuMs(root: number): Promise<Map<number, number>> {
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
  const stats = new Map<string, { parent: string; cpuMs: number }>();
  await Promise.all(
    pids.map(async (pid) => {
      const stat = await processStat(pid);
      if (stat) stats.set(pid, stat);
    }),
  );
  const below = (pid: string): boolean => {
    for (let parent = stats.get(pid)?.parent; parent && parent !== '0'; parent = stats.get(parent)?.parent) if (parent === String(root)) return true;
    return false;
  };
  const spent = new Map<number, number>();
  for (const [pid, stat] of stats) if (below(pid)) spent.set(Number(pid), stat.cpuMs);
  return spent;
}

/** The measured server: its process, and its database on the probed PostgreSQL server. */
export interface MeasuredServer {
  pid: number;
  database?: string;
}

/** `agentsOf`: the pid of the account service whose local agents' CPU each run reports (`agentsCpuMs`). */
export async function conditionsProbe(postgresUrl: string | undefined, agentsOf?: number) {
  const client = postgresUrl ? new pg.Client({ connectionString: postgresUrl }) : undefined;
  await client?.connect();
  // pg_stat_bgwriter holds the counts up to PostgreSQL 16; 17 moved them to pg_stat_checkpointer.
  const checkpoints = async (): Promise<number> => {
    if (!client) return 0;
    const query = (await client.query(`SELECT to_regclass('pg_catalog.pg_stat_checkpointer') IS NOT NULL AS v17`)).rows[0].v17
      ? 'SELECT num_timed + num_requested AS n FROM pg_stat_checkpointer'
      : 'SELECT checkpoints_timed + checkpoints_req AS n FROM pg_stat_bgwriter';
    return Number((await client.query(query)).rows[0].n);
  };
  // Each backend's CPU from /proc: PostgreSQL runs on this machine.
  const backendsCpuMs = async (database: string | undefined): Promise<Map<number, number>> => {
    const spent = new Map<number, number>();
    if (!client || !database) return spent;
    const { rows } = await client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [database]);
    for (const { pid } of rows) {
      const stat = await processStat(pid);
      if (stat) spent.set(pid, stat.cpuMs);
    }
    return spent;
  };
  const agentsCpuMs = async () => (agentsOf === undefined ? new Map<number, number>() : descendantsCpuMs(agentsOf));
  // Per process: a pool closes idle connections and opens new ones during a run (agents start and
  // stop), and a gone process's CPU leaves the sum (a plain difference of sums once came out
  // negative). One that ended during the run adds nothing (what it spent in the run is lost: a
  // slight undercount); one that began during it adds all it spent.
  const spentSince = (before: Map<number, number>, after: Map<number, number>) => {
    let ms = 0;
    for (const [pid, now] of after) ms += now - (before.get(pid) ?? 0);
    return ms;
  };
  return {
    async around<T>(measure: () => Promise<T>, server?: MeasuredServer): Promise<T & Conditions> {
      const before = await checkpoints();
      const cpuBefore = server && { process: await cpuMsOf(server.pid), backends: await backendsCpuMs(server.database) };
      const agentsBefore = await agentsCpuMs();
      const result = await measure();
      const agents = agentsOf === undefined ? {} : { agentsCpuMs: spentSince(agentsBefore, await agentsCpuMs()) };
      const spent =
        server && cpuBefore
          ? { cpuMs: (await cpuMsOf(server.pid)) - cpuBefore.process + spentSince(cpuBefore.backends, await backendsCpuMs(server.database)) }
          : {};
      return { ...result, loadAverage: Math.round(loadavg()[0]! * 10) / 10, checkpoint: (await checkpoints()) > before, ...spent, ...agents };
    },
    close: () => client?.end(),
  };
}
