/**
 * Starts local agent processes: inside the sandbox (sandbox.ts) when this machine can run one,
 * and decides once, at start-up, what it does when it cannot:
 * - `sandboxed`: bwrap, the agent's cgroup, its egress gateway; exec runs in a nested sandbox.
 * - `no-exec` (fail closed): the sandbox cannot be set up, so agents run without it and without
 *   the `exec` tool; one error line says why and how to fix it.
 * - `unsandboxed`: AGENT_SANDBOX=off, the operator's explicit choice, warned about at every start.
 *
 * In every mode an agent serves on a Unix socket in a run directory of its own (mode 0700, under
 * a private temporary directory of this process) and sends its outgoing HTTP through its egress
 * gateway, so provider keys never reach an agent.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Writable } from 'node:stream';
import type { Logger } from '../../../../common/log.js';
import { agentEntry } from './agent-entry.js';
import type { EgressGateway, GatewayOwner, OpenGateway } from '../../egress/gateway.js';
import {
  EXEC_PROXY,
  EXEC_SANDBOX_ARGS,
  EXEC_SANDBOX_ARGS_WITH_EGRESS,
  SANDBOX_RUN_DIR,
  SANDBOX_STATE_DIR,
  SANDBOX_WORKSPACE,
  createAgentCgroup,
  detectCgroups,
  probeSandbox,
  SANDBOX_ARGS_FD,
  sandboxArgs,
  sandboxArgsData,
  sandboxedCommand,
  type AgentCgroup,
  type CgroupMode,
  type ResourceLimits,
} from './sandbox.js';
import { unixAgentUrl } from '../../transport.js';

export interface LauncherOptions extends ResourceLimits {
  /** AGENT_SANDBOX: `on` (default) or `off`. */
  sandbox: 'on' | 'off';
  /** The bubblewrap binary. */
  bwrap: string;
  maxOpenFiles: number;
  /** Size of each sandbox's private /tmp (memory-backed, counted in its memory limit). */
  tmpBytes: number;
  /** AGENT_EXEC_NETWORK: `none` (default) or `allowlist` (the agent's egress allowlist, through its gateway). */
  execNetwork: 'none' | 'allowlist';
}

export type LaunchMode = 'sandboxed' | 'no-exec' | 'unsandboxed';

export interface LaunchedAgent {
  child: ChildProcess;
  url: string;
  /** Binds an agent launched unclaimed (the warm pool) to its user: its gateway meters and forwards from now on. */
  claim(userId: string): void;
}

interface Launch {
  runDir: string;
  gateway: OpenGateway;
  cgroup: AgentCgroup;
}

const SOCKET = 'agent.sock';
const EGRESS_SOCKET = 'egress.sock';
/** The exec relay's own gateway socket: the gateway adds no credentials on it. */
const EXEC_EGRESS_SOCKET = 'exec-egress.sock';
const SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin';
/** The pipe an agent reads its secrets from (server/agent/secrets.ts). */
const SECRETS_FD = 4;
/** Settings that are secrets: the agent secret, its bot's token and webhook secret, any key. */
const SECRET_SETTING = /(SECRET|TOKEN|_KEY$)/;

function splitSecrets(env: NodeJS.ProcessEnv): { config: NodeJS.ProcessEnv; secrets: Record<string, string> } {
  const config: NodeJS.ProcessEnv = {};
  const secrets: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (SECRET_SETTING.test(name)) secrets[name] = value;
    else config[name] = value;
  }
  return { config, secrets };
}

interface Plan {
  mode: LaunchMode;
  cgroupMode: CgroupMode;
}

export class AgentLauncher {
  /** Decided once, in the background from construction on: probing runs bwrap, which takes a moment. */
  private readonly plan: Promise<Plan>;
  private decided: Plan | undefined;
  /** Short on purpose: a Unix socket path must fit in 108 bytes. */
  private readonly runRoot = mkdtempSync(path.join(os.tmpdir(), 'agents-'));
  private readonly launches = new Map<ChildProcess, Launch>();
  /** Each launch has its own run directory and cgroup: a restart never races its predecessor's clean-up. */
  private launchCount = 0;

  constructor(
    private readonly options: LauncherOptions,
    private readonly gateway: EgressGateway,
    private readonly log: Logger,
  ) {
    chmodSync(this.runRoot, 0o700);
    this.plan = this.decide().then((plan) => (this.decided = plan));
  }

  /** How agents run here: `sandboxed`, `no-exec` (the sandbox cannot be set up) or `unsandboxed` (AGENT_SANDBOX=off). */
  async mode(): Promise<LaunchMode> {
    return (await this.plan).mode;
  }

  private async decide(): Promise<Plan> {
    const { options, log } = this;
    if (options.sandbox === 'off') {
      log.warn(
        "AGENT_SANDBOX=off: agents run WITHOUT a sandbox, as this service's own user; any guest's agent can read this machine's files and keys through exec",
      );
      return { mode: 'unsandboxed', cgroupMode: 'none' };
    }
    const probe = await probeSandbox(options.bwrap);
    if (!probe.ok) {
      log.error(
        { reason: probe.reason },
        'agents cannot be sandboxed, so they run WITHOUT the exec tool; install bubblewrap (apt-get install bubblewrap, or scripts/ensure-sandbox.sh) and allow unprivileged user namespaces, then restart',
      );
      return { mode: 'no-exec', cgroupMode: 'none' };
    }
    const cgroups = detectCgroups();
    if (cgroups.mode === 'none')
      log.warn({ reason: cgroups.reason }, 'agents are sandboxed; cgroups are not writable, so memory, process and CPU limits fall back to rlimits');
    else log.info({ cgroups: cgroups.mode, egress: this.gateway.origins }, 'agents are sandboxed (bubblewrap) with cgroup limits');
    return { mode: 'sandboxed', cgroupMode: cgroups.mode };
  }

  /**
   * Starts one agent; `env` is its configuration (secret, name …) without paths. `owner.unclaimed`:
   * a warm-pool agent, whose gateway lets nothing out until `claim` names its user.
   */
  async launch(agentId: string, workspace: string, env: NodeJS.ProcessEnv, owner: Omit<GatewayOwner, 'agentId'> = {}): Promise<LaunchedAgent> {
    const { mode, cgroupMode } = await this.plan;
    const name = `${agentId}.${++this.launchCount}`;
    const runDir = path.join(this.runRoot, name);
    mkdirSync(runDir, { mode: 0o700 });
    const sandboxed = mode === 'sandboxed';
    const execNetwork = sandboxed && this.options.execNetwork === 'allowlist';
    // Read by the gateway at each request, so that claiming takes effect at once.
    const gatewayOwner: GatewayOwner = { agentId, ...owner };
    const gateway = await this.gateway.open(
      { agent: path.join(runDir, EGRESS_SOCKET), exec: execNetwork ? path.join(runDir, EXEC_EGRESS_SOCKET) : undefined },
      gatewayOwner,
    );
    // agent.db beside the workspace (…/agents/<id>/state), where exec commands do not reach it.
    const stateDir = path.join(path.dirname(workspace), 'state');
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    const seen = sandboxed ? { workspace: SANDBOX_WORKSPACE, stateDir: SANDBOX_STATE_DIR, runDir: SANDBOX_RUN_DIR } : { workspace, stateDir, runDir };
    // Secrets travel on a pipe (AGENT_SECRETS_FD), never in an environment: a process's original
    // environment stays readable in /proc/<pid>/environ for as long as it lives.
    const { config: agentConfig, secrets } = splitSecrets(env);
    const entry = agentEntry();
    const agentEnv: NodeJS.ProcessEnv = {
      ...agentConfig,
      ...entry.env,
      AGENT_SECRETS_FD: String(SECRETS_FD),
      AGENT_SOCKET: path.join(seen.runDir, SOCKET),
      AGENT_EGRESS_SOCKET: path.join(seen.runDir, EGRESS_SOCKET),
      AGENT_WORKSPACE: seen.workspace,
      AGENT_STATE_DIR: seen.stateDir,
      ...(mode === 'no-exec' ? { AGENT_EXEC: 'off' } : {}),
      ...(sandboxed ? { PATH: SANDBOX_PATH, ...this.execSettings() } : {}),
      ...(execNetwork ? { AGENT_EXEC_EGRESS_SOCKET: path.join(seen.runDir, EXEC_EGRESS_SOCKET) } : {}),
    };
    const command = [process.execPath, ...entry.args];
    let cgroup: AgentCgroup = { procsFiles: [], remove() {} };
    let child: ChildProcess;
    try {
      if (sandboxed) {
        cgroup = createAgentCgroup(cgroupMode, name, this.options);
        const limitsByRlimit = cgroupMode === 'none' ? [`--max-old-space-size=${Math.floor(this.options.memoryBytes / 1024 / 1024 / 2)}`] : [];
        const spec = sandboxedCommand(this.options.bwrap, cgroup, this.options.maxOpenFiles, [command[0] as string, ...limitsByRlimit, ...command.slice(1)]);
        child = spawn(spec.file, spec.args, { env: agentEnv, stdio: ['ignore', 'inherit', 'inherit', 'pipe', 'pipe'] });
        (child.stdio[SANDBOX_ARGS_FD] as Writable).end(sandboxArgsData(sandboxArgs({ workspace, stateDir, runDir }, this.options)));
      } else {
        child = spawn(command[0] as string, command.slice(1), { env: agentEnv, stdio: ['ignore', 'inherit', 'inherit', 'ignore', 'pipe'] });
      }
      (child.stdio[SECRETS_FD] as Writable).end(JSON.stringify(secrets));
      // An agent stopped before it read them (a warm-pool agent making room while it starts, a
      // shutdown) resets these pipes: that is its exit, which onExit handles, not our error.
      for (const fd of [SANDBOX_ARGS_FD, SECRETS_FD]) child.stdio[fd]?.on('error', () => undefined);
    } catch (error) {
      cgroup.remove();
      await gateway.close();
      throw error;
    }
    this.launches.set(child, { runDir, gateway, cgroup });
    child.once('exit', () => void this.release(child));
    return {
      child,
      url: unixAgentUrl(path.join(runDir, SOCKET)),
      claim(userId) {
        gatewayOwner.userId = userId;
        gatewayOwner.unclaimed = false;
      },
    };
  }

  /** How a sandboxed agent runs exec: the nested sandbox, and its proxy when commands may use the allowlist. */
  private execSettings(): NodeJS.ProcessEnv {
    const { bwrap, execNetwork } = this.options;
    if (execNetwork === 'allowlist') return { AGENT_EXEC_SANDBOX: JSON.stringify([bwrap, ...EXEC_SANDBOX_ARGS_WITH_EGRESS]), AGENT_EXEC_PROXY: EXEC_PROXY };
    return { AGENT_EXEC_SANDBOX: JSON.stringify([bwrap, ...EXEC_SANDBOX_ARGS]) };
  }

  /**
   * Asks an agent to stop. bwrap does not pass signals on (a signal to it ends the whole
   * sandbox at once), so SIGTERM goes to the agent process inside, found as bwrap's descendant.
   */
  terminate(child: ChildProcess): void {
    // Only launched children reach here, so the plan is decided.
    if (this.decided?.mode !== 'sandboxed' || child.pid === undefined) {
      child.kill('SIGTERM');
      return;
    }
    const agent = descendants(child.pid).find((pid) => !commandOf(pid).startsWith('bwrap'));
    if (agent) process.kill(agent, 'SIGTERM');
    else child.kill('SIGTERM');
  }

  private async release(child: ChildProcess): Promise<void> {
    const launch = this.launches.get(child);
    if (!launch) return;
    this.launches.delete(child);
    launch.cgroup.remove();
    await launch.gateway.close();
    rmSync(launch.runDir, { recursive: true, force: true });
  }

  /** Once every agent has exited. */
  async close(): Promise<void> {
    await Promise.all([...this.launches.keys()].map((child) => this.release(child)));
    rmSync(this.runRoot, { recursive: true, force: true });
  }
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

/** Pids under `root`, nearest first (from /proc/<pid>/stat, as no children list is exposed here). */
function descendants(root: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = parents.get(ppid) ?? [];
      list.push(Number(entry));
      parents.set(ppid, list);
    } catch {
      // exited while we looked
    }
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length) {
    const children = parents.get(queue.shift() as number) ?? [];
    found.push(...children);
    queue.push(...children);
  }
  return found;
}
