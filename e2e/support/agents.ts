/**
 * The e2e product's local agent processes, found under its data directory
 * (playwright.config.ts: test-results/e2e-data), so a spec can kill one the way a crash would,
 * or stop and continue one the way a hung machine would. Each agent is the outermost process of
 * its cgroup (`agent-sandbox/<agent id>.<launch>`, when sandboxed) or that names its workspace in
 * its environment (when it runs unsandboxed).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const AGENTS = `${path.resolve('test-results/e2e-data/agents')}/`;

const read = (file: string) => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
};

/** Every process of every agent: pid → agent id. */
function agentOfPids(): Map<number, string> {
  const agentOf = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const sandboxed = /agent-sandbox\/([\w-]+)\.\d+/.exec(read(`/proc/${entry}/cgroup`));
    if (sandboxed) {
      agentOf.set(Number(entry), sandboxed[1]!);
      continue;
    }
    const words = read(`/proc/${entry}/environ`).split('\0');
    const hit = words.map((w) => w.slice(w.indexOf(AGENTS))).find((w) => w.startsWith(AGENTS));
    if (hit) agentOf.set(Number(entry), hit.slice(AGENTS.length).split('/')[0]!);
  }
  return agentOf;
}

/** Agent id → pids of the processes that are its outermost ones. */
export function agentProcesses(): Map<string, number[]> {
  const agentOf = agentOfPids();
  const result = new Map<string, number[]>();
  for (const [pid, agent] of agentOf) {
    const stat = read(`/proc/${pid}/stat`);
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (agentOf.get(parent) === agent) continue;
    result.set(agent, [...(result.get(agent) ?? []), pid]);
  }
  return result;
}

/**
 * Agent id → pids, of the agents that belong to a user: a warm-pool agent is marked `unclaimed`
 * beside its workspace until a new user claims it (docs/security.md, "Warm pool"). A new guest's
 * agent is the one that is claimed now and was not before, whether it came from the pool or
 * started cold; the pool's refill is a new process too, but unclaimed.
 */
export function claimedAgents(): Map<string, number[]> {
  const claimed = new Map<string, number[]>();
  for (const [agent, pids] of agentProcesses()) {
    if (!existsSync(path.join(AGENTS, agent, 'unclaimed'))) claimed.set(agent, pids);
  }
  return claimed;
}

/** SIGKILL to the given pids (processes the e2e run itself started, through the product). */
export function killNow(pids: number[]): void {
  for (const pid of pids) process.kill(pid, 'SIGKILL');
}

/**
 * SIGSTOP or SIGCONT to every process of an agent: stopped, it keeps its connections
 * open and sends nothing, as a hung service does.
 */
export function signalAgent(agent: string, signal: 'SIGSTOP' | 'SIGCONT'): void {
  for (const [pid, owner] of agentOfPids()) if (owner === agent) process.kill(pid, signal);
}
