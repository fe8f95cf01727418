/**
 * `local` (the default): one agent process per user on this machine, started on first use (in its
 * sandbox, launcher.ts) with its own workspace under DATA_DIR/agents/<agent id>/, its own random
 * secret and a Unix socket only this service can reach; restarted with backoff when it dies;
 * stopped after AGENT_IDLE_TIMEOUT without use — and only when it says it is idle (no chat or
 * subagent run, heartbeat, request or Telegram polling in flight: the agent's GET /lifecycle).
 * Every stop we ask for is graceful: SIGTERM, and the agent gets AGENT_STOP_GRACE to finish
 * (what it must abandon ends with an `error` saying it was interrupted) before SIGKILL.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../../../common/errors.js';
import type { Logger } from '../../../../common/log.js';
import { newAgentSecret, type AgentEndpoint, type AgentRegistry } from '../../registry.js';
import type { AgentLauncher } from './launcher.js';
import { agentFetch, releaseAgentConnections } from '../../transport.js';
import { agentClient } from '../../client.js';
import type { LifecycleReport } from '@contracts/agent/lifecycle.js';
import { agentUnavailable, CAPACITY_RETRY_AFTER_SECONDS, type AgentProvisioner, type AgentStats, type RunningAgentInfo } from '../provisioner.js';

async function waitForHealth(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const agent = agentFetch(url);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw agentUnavailable('The agent exited while starting');
    const ok = await agent.fetch(`${agent.base}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  child.kill('SIGKILL');
  throw agentUnavailable('The agent did not start in time');
}

interface Running {
  agent: AgentEndpoint;
  /** The next wake time the agent last reported (ISO), as stored. */
  reportedWake?: string | null;
  child: ChildProcess;
  url: string;
  lastUsed: number;
  startedAt: number;
  /** Set when we stop it (idle, shutdown): such an exit is not a crash. */
  stopRequested: boolean;
  /** False until /health answers; the idle sweep leaves starting agents alone. */
  ready: boolean;
}

/**
 * What a local agent inherits from the account service's environment: runtime settings. Never a
 * key or secret (provider keys are added by the egress gateway on the way out); the model settings
 * come from the account's configuration (egress-gateway.ts, agentModelEnvironment).
 */
const AGENT_ENV =
  /^(PATH|HOME|LANG|LC_\w+|TZ|TMPDIR|NODE_OPTIONS|LOG_LEVEL|LOG_PRETTY|HEARTBEAT_(?!NEXT_AT$)\w+|SUBAGENT_\w+|AGENT_EXEC|AGENT_EXEC_TIMEOUT|AGENT_RUN_\w+)$/;

export function agentEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => AGENT_ENV.test(name)));
}

export interface LocalProvisionerOptions {
  dataDir: string;
  /** Seconds without use before an agent is stopped; 0 keeps agents running. */
  idleTimeoutSeconds: number;
  /** At most this many agents run at once (AGENT_MAX_RUNNING); unset: no cap. */
  maxRunning?: number;
  /** How long a stopping agent may take to finish its runs before it interrupts them (ms). */
  stopGraceMs?: number;
  /** Environment every agent gets (MODEL, provider keys, …) on top of its own settings. */
  agentEnv: NodeJS.ProcessEnv;
  /** Starts the processes (sandboxed where it can). */
  launcher: AgentLauncher;
  /** Settings of the user's own (their bot: token, webhook secret), added to the agent's environment at start. */
  userEnv?: (userId: string) => Promise<Record<string, string>>;
  /** The workspace quota of a user's agent, in MB (guests get less); unset: the agent's default. */
  workspaceQuotaMb?: (userId: string) => Promise<number>;
  startTimeoutMs?: number;
  /** Each start that became healthy: seconds from spawn to the first healthy answer. */
  onColdStart?: (seconds: number) => void;
  /** An exit we did not ask for (the agent is restarted after it): the `agent.crashed` webhook event. */
  onCrash?: (userId: string, exit: { code: number | null; signal: NodeJS.Signals | null }) => void;
}

export class LocalProvisioner implements AgentProvisioner {
  private readonly running = new Map<string, Running>();
  private readonly starting = new Map<string, Promise<AgentEndpoint>>();
  private readonly restarts = new Map<string, { attempts: number; timer?: NodeJS.Timeout }>();
  /** Agents being stopped: a new process for one waits until the old one has let go of agent.db. */
  private readonly stopping = new Map<string, Promise<void>>();
  private readonly sweeper: NodeJS.Timeout | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;
  private sweeping = false;
  /** Admissions (capacity checks and evictions) one at a time, so two starts never share a slot. */
  private admission: Promise<unknown> = Promise.resolve();
  /** Starts admitted but not yet in `running`. */
  private reserved = 0;
  private evicted = 0;
  private crashed = 0;

  constructor(
    private readonly registry: AgentRegistry,
    private readonly log: Logger,
    private readonly options: LocalProvisionerOptions,
  ) {
    if (options.idleTimeoutSeconds > 0) {
      this.sweeper = setInterval(() => void this.sweep(), Math.min(30_000, options.idleTimeoutSeconds * 500));
      this.sweeper.unref();
    }
  }

  async agentFor(userId: string): Promise<AgentEndpoint> {
    if (this.closed) throw agentUnavailable('The service is shutting down');
    const pending = this.starting.get(userId);
    if (pending) return pending;
    const start = this.ensure(userId).finally(() => this.starting.delete(userId));
    this.starting.set(userId, start);
    return start;
  }

  private async ensure(userId: string): Promise<AgentEndpoint> {
    const agent = (await this.registry.forUser(userId)) ?? (await this.create(userId));
    if (agent.kind !== 'local') return agent;
    const running = this.running.get(agent.id);
    if (running) {
      running.lastUsed = Date.now();
      return { ...agent, url: running.url };
    }
    return this.start(agent);
  }

  private async create(userId: string): Promise<AgentEndpoint> {
    return this.registry
      .add({ name: `local-${userId}`, url: 'http://127.0.0.1:0', secret: newAgentSecret(), kind: 'local', userId })
      .catch(async (error: unknown) => {
        // Another instance created it first.
        const existing = await this.registry.forUser(userId);
        if (existing) return existing;
        throw error;
      });
  }

  private workspaceOf(agentId: string): string {
    return path.join(this.options.dataDir, 'agents', agentId, 'workspace');
  }

  private async start(agent: AgentEndpoint): Promise<AgentEndpoint> {
    await this.stopping.get(agent.id);
    const turn = this.admission.then(() => this.makeRoom());
    this.admission = turn.catch(() => undefined);
    await turn;
    let launched: Awaited<ReturnType<AgentLauncher['launch']>>;
    const spawning = performance.now();
    try {
      const workspace = this.workspaceOf(agent.id);
      await mkdir(workspace, { recursive: true });
      launched = await this.launch(agent, workspace);
    } finally {
      this.reserved--;
    }
    const { child, url } = launched;
    const running: Running = { agent, child, url, reportedWake: undefined, lastUsed: Date.now(), startedAt: Date.now(), stopRequested: false, ready: false };
    this.running.set(agent.id, running);
    child.once('exit', (code, signal) => this.onExit(agent, running, code, signal));
    await waitForHealth(url, child, this.options.startTimeoutMs ?? 30_000);
    running.ready = true;
    this.options.onColdStart?.((performance.now() - spawning) / 1000);
    running.lastUsed = Date.now();
    if (agent.url !== url) await this.registry.moveTo(agent.id, url);
    this.log.info({ agent: agent.name, url, pid: child.pid }, 'agent started');
    return { ...agent, url };
  }

  /**
   * Reserves a slot for one more agent. At the cap, the least recently used agent that says it
   * is idle is stopped (its state is on disk; its next call starts it again); when every running
   * agent is busy, 503 AGENT_CAPACITY.
   */
  private async makeRoom(): Promise<void> {
    const max = this.options.maxRunning;
    while (max !== undefined && this.running.size + this.reserved >= max) {
      const candidates = [...this.running].filter(([, r]) => r.ready).sort(([, a], [, b]) => a.lastUsed - b.lastUsed);
      let freed = false;
      for (const [id, running] of candidates) {
        const seen = running.lastUsed;
        const report = await this.lifecycle(running);
        if (this.running.get(id) !== running) {
          freed = true; // it went away meanwhile (idle sweep, crash): look again
          break;
        }
        if (report?.busy || running.lastUsed !== seen) continue;
        this.evicted++;
        this.log.info({ agentId: id, running: this.running.size, max }, 'at the running-agent cap: stopping the least recently used idle agent');
        await this.stop(id, running);
        freed = true;
        break;
      }
      if (!freed) {
        throw new AppError(503, 'AGENT_CAPACITY', 'The service is busy: every agent it can run is working. Try again shortly.', {
          'Retry-After': String(CAPACITY_RETRY_AFTER_SECONDS),
        });
      }
    }
    this.reserved++;
  }

  private async launch(agent: AgentEndpoint, workspace: string) {
    // A heartbeat that fell due while it slept runs right after start.
    const nextWake = await this.registry.nextWake(agent.id);
    return this.options.launcher.launch(
      agent.id,
      workspace,
      {
        ...(nextWake ? { HEARTBEAT_NEXT_AT: nextWake.toISOString() } : {}),
        ...(this.options.userEnv && agent.userId ? await this.options.userEnv(agent.userId) : {}),
        ...this.options.agentEnv,
        AGENT_SECRET: agent.secret,
        AGENT_SECRET_SHA256: '',
        AGENT_NAME: agent.name,
        AGENT_STOP_GRACE: String(this.stopGraceMs / 1000),
        ...(this.options.workspaceQuotaMb && agent.userId ? { AGENT_WORKSPACE_QUOTA_MB: String(await this.options.workspaceQuotaMb(agent.userId)) } : {}),
      },
      agent.userId ?? undefined,
    );
  }

  /** Unexpected exits restart with backoff (1 s, 2 s, 4 s … 30 s); stops we asked for do not. */
  private onExit(agent: AgentEndpoint, running: Running, code: number | null, signal: NodeJS.Signals | null): void {
    releaseAgentConnections(running.url);
    if (this.closed || running.stopRequested) return;
    if (this.running.get(agent.id) === running) this.running.delete(agent.id);
    this.crashed++;
    if (agent.userId) this.options.onCrash?.(agent.userId, { code, signal });
    const state = this.restarts.get(agent.id) ?? { attempts: 0 };
    if (Date.now() - running.startedAt > 60_000) state.attempts = 0;
    const delay = Math.min(30_000, 1_000 * 2 ** state.attempts);
    state.attempts += 1;
    this.log.warn({ agent: agent.name, code, signal, restartInMs: delay }, 'agent died; restarting');
    state.timer = setTimeout(() => {
      if (this.closed || this.running.has(agent.id)) return;
      void this.agentFor(agent.userId ?? '').catch((error: unknown) => this.log.error({ err: error, agent: agent.name }, 'agent restart failed'));
    }, delay);
    state.timer.unref();
    this.restarts.set(agent.id, state);
  }

  private get stopGraceMs(): number {
    return this.options.stopGraceMs ?? 10_000;
  }

  /** What the agent says about itself; undefined when it does not answer. */
  private async lifecycle(running: Running): Promise<LifecycleReport | undefined> {
    let report: LifecycleReport;
    try {
      report = await agentClient({ url: running.url, secret: running.agent.secret }).health.lifecycle.query(undefined, { signal: AbortSignal.timeout(5_000) });
    } catch {
      return undefined;
    }
    // Kept for the wake scheduler: what it must wake the agent for once it sleeps.
    if (report.next_wake_at !== running.reportedWake) {
      await this.registry.setNextWake(running.agent.id, report.next_wake_at ? new Date(report.next_wake_at) : null);
      running.reportedWake = report.next_wake_at;
    }
    return report;
  }

  /**
   * Stops the user's agent if it runs (gracefully) so that its next start reads its settings
   * again; `start` starts it right away (a long-polling bot must run).
   */
  async restart(userId: string, opts: { start: boolean }): Promise<void> {
    const agent = await this.registry.forUser(userId);
    const running = agent && this.running.get(agent.id);
    if (agent && running) await this.stop(agent.id, running);
    if (opts.start || running) await this.agentFor(userId);
  }

  /** Starts the user's agent for its schedule unless it runs (it then lives by the idle rule). */
  async wake(userId: string): Promise<void> {
    const agent = await this.registry.forUser(userId);
    // Running: its own timer runs the heartbeat; waking it must not count as a use.
    if (agent && this.running.has(agent.id)) return;
    await this.agentFor(userId);
  }

  /**
   * Agents unused for the idle timeout are asked whether they are busy; a busy one counts as
   * used now (the idle time starts again when its work ends), an idle or mute one is stopped.
   */
  private async sweep(): Promise<void> {
    if (this.sweeping || this.closed) return;
    this.sweeping = true;
    try {
      const idleMs = this.options.idleTimeoutSeconds * 1000;
      for (const [id, running] of [...this.running]) {
        if (!running.ready || Date.now() - running.lastUsed < idleMs) continue;
        const seen = running.lastUsed;
        const report = await this.lifecycle(running);
        // Used while we asked: not idle after all.
        if (this.closed || this.running.get(id) !== running || running.lastUsed !== seen) continue;
        if (report?.busy) {
          running.lastUsed = Date.now();
          continue;
        }
        this.log.info({ agentId: id, answered: report !== undefined }, 'stopping idle agent');
        this.stop(id, running);
      }
    } catch (error) {
      this.log.error({ err: error }, 'idle sweep failed');
    } finally {
      this.sweeping = false;
    }
  }

  /** Forgets the agent at once (its next call starts a new process) and stops it gracefully. */
  private stop(id: string, running: Running): Promise<void> {
    this.running.delete(id);
    const stopped = this.stopProcess(running).finally(() => this.stopping.delete(id));
    this.stopping.set(id, stopped);
    return stopped;
  }

  private stopProcess(running: Running): Promise<void> {
    const { child } = running;
    running.stopRequested = true;
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      const kill = setTimeout(() => child.kill('SIGKILL'), this.stopGraceMs + 5_000);
      child.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      this.options.launcher.terminate(child);
    });
  }

  stats(): AgentStats {
    let starting = this.reserved;
    for (const running of this.running.values()) if (!running.ready) starting++;
    return { running: this.running.size, starting, evicted: this.evicted, crashed: this.crashed };
  }

  async stopAgentOf(userId: string): Promise<boolean> {
    await this.starting.get(userId)?.catch(() => undefined);
    const agent = await this.registry.forUser(userId);
    if (!agent) return false;
    clearTimeout(this.restarts.get(agent.id)?.timer);
    this.restarts.delete(agent.id);
    const running = this.running.get(agent.id);
    if (running) await this.stop(agent.id, running);
    this.log.info({ agent: agent.name, wasRunning: running !== undefined }, 'agent stopped by an operator');
    return running !== undefined;
  }

  listRunning(): RunningAgentInfo[] {
    return [...this.running].map(([agentId, r]) => ({
      agentId,
      name: r.agent.name,
      userId: r.agent.userId,
      url: r.url,
      secret: r.agent.secret,
      pid: r.child.pid,
      startedAt: new Date(r.startedAt),
      lastUsedAt: new Date(r.lastUsed),
    }));
  }

  async deleteAgentOf(userId: string): Promise<void> {
    await this.starting.get(userId)?.catch(() => undefined);
    const agent = await this.registry.forUser(userId);
    if (!agent) return;
    if (agent.kind === 'local') {
      clearTimeout(this.restarts.get(agent.id)?.timer);
      this.restarts.delete(agent.id);
      const running = this.running.get(agent.id);
      this.running.delete(agent.id);
      if (running) await this.stopProcess(running);
      await this.stopping.get(agent.id);
      await rm(path.dirname(this.workspaceOf(agent.id)), { recursive: true, force: true });
      await this.registry.remove(agent.name);
    } else {
      await this.registry.assign(agent.name, null);
    }
    this.log.info({ agent: agent.name }, 'account deleted: agent stopped and removed');
  }

  /** Where the healthy running agents answer, with their secrets: what GET /metrics scrapes. */
  runningAgents(): Array<Pick<AgentEndpoint, 'url' | 'secret'>> {
    return [...this.running.values()].filter((r) => r.ready).map((r) => ({ url: r.url, secret: r.agent.secret }));
  }

  /** The pids of running agents (for operators and tests). */
  processes(): Array<{ agentId: string; pid: number | undefined; url: string }> {
    return [...this.running].map(([agentId, r]) => ({ agentId, pid: r.child.pid, url: r.url }));
  }

  /** Stops every agent gracefully (runs get the grace period). Safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      if (this.sweeper) clearInterval(this.sweeper);
      for (const state of this.restarts.values()) clearTimeout(state.timer);
      const running = [...this.running.values()];
      // Their next wake times, so that the scheduler (here or on another instance) keeps them.
      await Promise.all(running.filter((r) => r.ready).map((r) => this.lifecycle(r).catch(() => undefined)));
      await Promise.all([...running.map((r) => this.stopProcess(r)), ...this.stopping.values()]);
      this.running.clear();
      await this.options.launcher.close();
    })();
    return this.closing;
  }
}
