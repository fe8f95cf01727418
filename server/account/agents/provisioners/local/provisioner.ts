/**
 * `local` (the default): one agent process per user on this machine, started on first use (in its
 * sandbox, launcher.ts) with its own workspace under DATA_DIR/agents/<agent id>/, its own random
 * secret and a Unix socket only this service can reach; restarted with backoff when it dies;
 * stopped after AGENT_IDLE_TIMEOUT without use — and only when it says it is idle (no chat or
 * subagent run, heartbeat, request or Telegram polling in flight: the agent's GET /lifecycle).
 * Every stop we ask for is graceful: SIGTERM, and the agent gets AGENT_STOP_GRACE to finish
 * (what it must abandon ends with an `error` saying it was interrupted) before SIGKILL.
 *
 * The warm pool (AGENT_WARM_POOL): a few agents started ahead of need, each with a fresh id, a
 * fresh secret and a new empty directory, launched exactly as a new guest's agent would be, and
 * reachable by nobody: no registry row, and a gateway that lets nothing out. A new user's first
 * call takes one (taken from the pool synchronously, so two users never get the same) and the
 * registry row is written with that id and secret: its directory, its process and its secret are
 * that user's from then on, as if started for them. A pooled agent is never handed back or on;
 * one that fails to be claimed is stopped and deleted. Pooled agents count in AGENT_MAX_RUNNING,
 * the pool refills in the background only into a free slot, and they are the first stopped when
 * a user needs the slot. A claimed agent is replaced a second later, and not while new accounts
 * arrive at a flood's rate (FLOOD_SIGNUPS a second): starting one agent a second (about a core's
 * second each) would serve few of a flood's users and take that CPU from their answers; the pool
 * refills once the flood has passed.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../../../common/errors.js';
import type { Logger } from '../../../../common/log.js';
import { newAgentSecret, type AgentEndpoint, type AgentRegistry } from '../../registry.js';
import type { AgentLauncher, LaunchedAgent } from './launcher.js';
import { agentFetch, releaseAgentConnections } from '../../transport.js';
import { agentClient } from '../../client.js';
import type { LifecycleReport } from '@contracts/agent/lifecycle.js';
import { tellZone } from '../../user-zone.js';
import { agentUnavailable, CAPACITY_RETRY_AFTER_SECONDS, type AgentStats, type RunningAgentInfo, type SleepingAgents } from '../provisioner.js';

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
  launched: LaunchedAgent;
  /** A warm-pool agent nobody has claimed: it belongs to no user, holds nothing, and is the first stopped for room. */
  pooled: boolean;
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
 * come from the account's configuration (egress/gateway.ts, agentModelEnvironment).
 */
const AGENT_ENV =
  /^(PATH|HOME|LANG|LC_\w+|TZ|TMPDIR|NODE_OPTIONS|LOG_LEVEL|LOG_PRETTY|HEARTBEAT_(?!NEXT_AT$)\w+|SUBAGENT_\w+|AGENT_EXEC|AGENT_EXEC_TIMEOUT|AGENT_RUN_\w+)$/;

export function agentEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => AGENT_ENV.test(name)));
}

/** Two sets of settings hold the same names and values. */
function sameSettings(a: Record<string, string> = {}, b: Record<string, string> = {}): boolean {
  const names = Object.keys(a);
  return names.length === Object.keys(b).length && names.every((name) => a[name] === b[name]);
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
  /** The settings that follow the user's account tier (workspace quota, task limits; guests get less); unset: the agent's defaults. */
  tierEnv?: (userId: string) => Promise<Record<string, string>>;
  /** The user's time zone as the account keeps it (USER_TIMEZONE at start; told to a claimed warm-pool agent). */
  userZone?: (userId: string) => Promise<string | null>;
  startTimeoutMs?: number;
  /** Each start that became healthy: seconds from spawn to the first healthy answer. */
  onColdStart?: (seconds: number) => void;
  /**
   * AGENT_WARM_POOL: how many agents to keep started for new users, and the tier settings they
   * start with (a guest's: most new users are guests; a user who would get others starts cold).
   */
  warmPool?: { size: number; tierEnv?: Record<string, string> };

  /** An exit we did not ask for (the agent is restarted after it): the `agent.crashed` webhook event. */
  onCrash?: (userId: string, exit: { code: number | null; signal: NodeJS.Signals | null }) => void;
}

/**
 * How a start may get its slot: `userCall` (a user's own request) may stop another user's idle
 * agent and may create a new user's agent; a sign-in warm-up may do neither (a new user gets a
 * pooled agent or waits for their first call).
 */
type Admission = 'userCall' | 'warmUp';

/** What a warm-up ends with when it would start nothing: the user's first call starts the agent. */
const NOT_WARMED = new Error('not started at sign-in');

/** Sign-in warm-ups starting at once; more are skipped (the user's first call starts the agent anyway). */
const MAX_WARMUPS_IN_FLIGHT = 2;
/** New accounts this many within FLOOD_WINDOW_MS are a flood: the pool does not refill during one. */
const FLOOD_SIGNUPS = 5;
const FLOOD_WINDOW_MS = 1_000;
/** Beside a warm-pool agent's workspace until it is claimed: what start-up clean-up may delete. */
const UNCLAIMED_MARKER = 'unclaimed';

export class LocalProvisioner implements SleepingAgents {
  readonly agentKind = 'local';
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
  /** Warm-pool agents ready to be claimed, oldest first. */
  private readonly pool: Running[] = [];
  private poolStarting = 0;
  private poolClaims = 0;
  /** Pooled starts that failed in a row: the next fill waits 1 s, 2 s … 30 s. */
  private poolFailures = 0;
  /** The next fill, when one waits (a failure's backoff, a claim, a flood). */
  private poolRetry: NodeJS.Timeout | undefined;
  /** When the last FLOOD_SIGNUPS new accounts signed in, oldest first. */
  private readonly recentSignups: number[] = [];
  /** Users whose agent a sign-in is starting (`warmUp`). */
  private readonly warming = new Set<string>();

  constructor(
    private readonly registry: AgentRegistry,
    private readonly log: Logger,
    private readonly options: LocalProvisionerOptions,
  ) {
    if (options.idleTimeoutSeconds > 0) {
      this.sweeper = setInterval(() => void this.sweep(), Math.min(30_000, options.idleTimeoutSeconds * 500));
      this.sweeper.unref();
    }
    if ((options.warmPool?.size ?? 0) > 0) void this.removeUnclaimedLeftovers().finally(() => this.fillPool());
  }

  async agentFor(userId: string): Promise<AgentEndpoint> {
    if (this.closed) throw agentUnavailable('The service is shutting down');
    const pending = this.starting.get(userId);
    // A sign-in's warm-up may not make room at another user's cost; this call may.
    if (pending) return this.warming.has(userId) ? pending.catch(() => this.agentFor(userId)) : pending;
    return this.begin(userId, 'userCall');
  }

  private begin(userId: string, admission: Admission): Promise<AgentEndpoint> {
    const start = this.ensure(userId, admission).finally(() => this.starting.delete(userId));
    this.starting.set(userId, start);
    return start;
  }

  /**
   * After a sign-in: a new user takes a pooled agent if one is ready; a returning user's sleeping
   * agent starts, into a free slot or one a pooled agent yields, never by stopping another user's
   * agent, and at most MAX_WARMUPS_IN_FLIGHT at once, so a flood of sign-ins cannot churn agents or
   * start more than the host holds. Never rejects. A new account (`created`) with no pooled agent
   * ready costs nothing here: no look-up, since its first call starts its agent anyway.
   */
  warmUp(userId: string, opts: { created?: boolean } = {}): Promise<void> {
    if (opts.created) this.noteSignup();
    if (opts.created && this.pool.length === 0) return Promise.resolve();
    if (this.closed || this.starting.has(userId) || this.warming.size >= MAX_WARMUPS_IN_FLIGHT) return Promise.resolve();
    this.warming.add(userId);
    return this.begin(userId, 'warmUp').then(
      () => void this.warming.delete(userId),
      (error: unknown) => {
        this.warming.delete(userId);
        if (error !== NOT_WARMED && !(error instanceof AppError && error.appCode === 'AGENT_CAPACITY'))
          this.log.warn({ err: error, userId }, 'starting the agent at sign-in failed');
      },
    );
  }

  private async ensure(userId: string, admission: Admission): Promise<AgentEndpoint> {
    const existing = await this.registry.forUser(userId);
    if (!existing) {
      const claimed = await this.claimPooled(userId);
      if (claimed) return claimed;
      // A cold start for a brand-new user at sign-in would be a process per sign-up, used or not.
      if (admission === 'warmUp') throw NOT_WARMED;
    }
    const agent = existing ?? (await this.create(userId));
    if (agent.kind !== 'local') return agent;
    const running = this.running.get(agent.id);
    if (running) {
      running.lastUsed = Date.now();
      return { ...agent, url: running.url };
    }
    return this.start(agent, admission);
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

  /** Everything of one agent: its workspace, its state directory (launcher.ts). */
  private agentDirOf(agentId: string): string {
    return path.join(this.options.dataDir, 'agents', agentId);
  }

  private workspaceOf(agentId: string): string {
    return path.join(this.agentDirOf(agentId), 'workspace');
  }

  private async start(agent: AgentEndpoint, admission: Admission): Promise<AgentEndpoint> {
    await this.stopping.get(agent.id);
    await this.admit(() => this.makeRoom(admission));
    const running = await this.spawn(agent, () => this.settingsOf(agent), { userId: agent.userId ?? undefined });
    await this.ready(running);
    if (agent.url !== running.url) await this.registry.moveTo(agent.id, running.url);
    this.log.info({ agent: agent.name, url: running.url, pid: running.child.pid }, 'agent started');
    return { ...agent, url: running.url };
  }

  /** Admissions run one at a time (capacity checks and evictions), so two starts never share a slot. */
  private admit<T>(step: () => Promise<T>): Promise<T> {
    const turn = this.admission.then(step);
    this.admission = turn.catch(() => undefined);
    return turn;
  }

  /** Launches an admitted agent (its slot reserved); `ready` then waits until it answers /health. */
  private async spawn(agent: AgentEndpoint, settings: () => Promise<NodeJS.ProcessEnv>, owner: { userId?: string; unclaimed?: boolean }): Promise<Running> {
    let launched: LaunchedAgent;
    try {
      const env = await settings();
      const workspace = this.workspaceOf(agent.id);
      await mkdir(workspace, { recursive: true });
      launched = await this.options.launcher.launch(agent.id, workspace, env, owner);
    } finally {
      this.reserved--;
    }
    const { child, url } = launched;
    if (this.closed) {
      // Shutdown began while it launched: close() did not see it.
      child.kill('SIGKILL');
      throw agentUnavailable('The service is shutting down');
    }
    const running: Running = {
      agent,
      launched,
      pooled: owner.unclaimed === true,
      child,
      url,
      reportedWake: undefined,
      lastUsed: Date.now(),
      startedAt: Date.now(),
      stopRequested: false,
      ready: false,
    };
    this.running.set(agent.id, running);
    child.once('exit', (code, signal) => this.onExit(running, code, signal));
    return running;
  }

  private async ready(running: Running): Promise<void> {
    await waitForHealth(running.url, running.child, this.options.startTimeoutMs ?? 30_000);
    running.ready = true;
    this.options.onColdStart?.((Date.now() - running.startedAt) / 1000);
    running.lastUsed = Date.now();
  }

  /**
   * Reserves a slot for one more agent. At the cap, a pooled agent is stopped first, then (for a
   * user's own call) the least recently used agent that says it is idle (its state is on disk; its
   * next call starts it again); when nothing can go, 503 AGENT_CAPACITY.
   */
  private async makeRoom(admission: Admission): Promise<void> {
    const max = this.options.maxRunning;
    while (max !== undefined && this.running.size + this.reserved >= max) {
      // A ready one, else one still starting (it would take the slot this user needs).
      const pooled = this.pool[0] ?? [...this.running.values()].find((r) => r.pooled);
      if (pooled) {
        this.log.info({ agentId: pooled.agent.id, running: this.running.size, max }, 'at the running-agent cap: a warm-pool agent makes room');
        await this.discard(pooled);
        continue;
      }
      const candidates =
        admission === 'userCall' ? [...this.running].filter(([, r]) => r.ready && !r.pooled).sort(([, a], [, b]) => a.lastUsed - b.lastUsed) : [];
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

  /** The agent's settings; a warm-pool agent gets what a new guest's would (no user settings, no wake, the pool's quota). */
  private async settingsOf(agent: AgentEndpoint): Promise<NodeJS.ProcessEnv> {
    const { userId } = agent;
    // A heartbeat that fell due while it slept runs right after start.
    const nextWake = userId ? await this.registry.nextWake(agent.id) : null;
    const tierEnv = userId ? await this.options.tierEnv?.(userId) : this.options.warmPool?.tierEnv;
    const zone = userId ? await this.options.userZone?.(userId) : null;
    return {
      ...(nextWake ? { HEARTBEAT_NEXT_AT: nextWake.toISOString() } : {}),
      ...(zone ? { USER_TIMEZONE: zone } : {}),
      ...(this.options.userEnv && userId ? await this.options.userEnv(userId) : {}),
      ...this.options.agentEnv,
      AGENT_SECRET: agent.secret,
      AGENT_SECRET_SHA256: '',
      // By the agent's id, which it has from its start, so a pooled agent names itself as it will once claimed.
      AGENT_NAME: `local-${agent.id}`,
      AGENT_STOP_GRACE: String(this.stopGraceMs / 1000),
      ...tierEnv,
    };
  }

  // --- The warm pool ---

  /**
   * Starts pooled agents, one after another, until the pool is full or no slot is free; never
   * stops anything for it. Called whenever that may have changed (a claim, a stop).
   */
  private fillPool(): void {
    const size = this.options.warmPool?.size ?? 0;
    if (this.closed || this.poolRetry || this.poolStarting > 0 || this.pool.length >= size) return;
    if (this.flooding()) {
      this.fillPoolIn(FLOOD_WINDOW_MS);
      return;
    }
    this.poolStarting++;
    this.startPooled().then(
      (started) => {
        this.poolStarting--;
        if (!started) return;
        this.poolFailures = 0;
        this.fillPool();
      },
      (error: unknown) => {
        this.poolStarting--;
        if (this.closed) return;
        const delay = Math.min(30_000, 1_000 * 2 ** this.poolFailures++);
        this.log.warn({ err: error, retryInMs: delay }, 'starting a warm-pool agent failed');
        this.fillPoolIn(delay);
      },
    );
  }

  private fillPoolIn(delayMs: number): void {
    if (this.closed || this.poolRetry) return;
    this.poolRetry = setTimeout(() => {
      this.poolRetry = undefined;
      this.fillPool();
    }, delayMs);
    this.poolRetry.unref();
  }

  private noteSignup(now = Date.now()): void {
    this.recentSignups.push(now);
    if (this.recentSignups.length > FLOOD_SIGNUPS) this.recentSignups.shift();
  }

  /** FLOOD_SIGNUPS new accounts within the last FLOOD_WINDOW_MS. */
  private flooding(now = Date.now()): boolean {
    return this.recentSignups.length === FLOOD_SIGNUPS && now - (this.recentSignups[0] as number) < FLOOD_WINDOW_MS;
  }

  /** One pooled agent into a free slot; false when there is none. */
  private async startPooled(): Promise<boolean> {
    const admitted = await this.admit(async () => {
      const max = this.options.maxRunning;
      if (this.closed || (max !== undefined && this.running.size + this.reserved >= max)) return false;
      this.reserved++;
      return true;
    });
    if (!admitted) return false;
    const id = randomUUID();
    const agent: AgentEndpoint = { id, name: `pool-${id}`, url: '', secret: newAgentSecret(), kind: 'local', userId: null };
    const running = await this.spawn(
      agent,
      async () => {
        // Marked before anything runs in it: a directory still marked at start-up belongs to nobody.
        await mkdir(this.agentDirOf(id), { recursive: true });
        await writeFile(path.join(this.agentDirOf(id), UNCLAIMED_MARKER), '');
        return this.settingsOf(agent);
      },
      { unclaimed: true },
    ).catch(async (error: unknown) => {
      await rm(this.agentDirOf(id), { recursive: true, force: true });
      throw error;
    });
    try {
      await this.ready(running);
    } catch (error) {
      // Stopped while starting to make room for a user (or shutdown): not a failure.
      if (running.stopRequested) return true;
      throw error;
    }
    if (this.running.get(id) === running) this.pool.push(running);
    return true;
  }

  /**
   * The new user's own agent from the pool, or undefined when none is ready or this user's agent
   * would start with other settings (a larger quota or task limits, a bot): those start cold, as before.
   */
  private async claimPooled(userId: string): Promise<AgentEndpoint | undefined> {
    const pool = this.options.warmPool;
    if (!pool || this.pool.length === 0) return undefined;
    const [tierEnv, userEnv] = await Promise.all([this.options.tierEnv?.(userId), this.options.userEnv?.(userId)]);
    if (!sameSettings(tierEnv, pool.tierEnv) || Object.keys(userEnv ?? {}).length > 0) return undefined;
    // Synchronous from here to the registry write: no other claim or eviction can take the same one.
    const running = this.pool.shift();
    if (!running) return undefined;
    const agent: AgentEndpoint = { ...running.agent, name: `local-${userId}`, url: running.url, userId };
    // The user's from here: a crash while the row is written restarts it for them (onExit).
    running.pooled = false;
    running.agent = agent;
    running.lastUsed = Date.now();
    try {
      await this.registry.add({ id: agent.id, name: agent.name, url: agent.url, secret: agent.secret, kind: 'local', userId });
    } catch (error) {
      // Another instance made this user's agent first, or the store failed: this one goes, unused.
      this.log.info({ err: error, agentId: agent.id }, 'a warm-pool agent could not be claimed; it is discarded');
      await this.discard(running);
      return undefined;
    }
    running.launched.claim(userId);
    await rm(path.join(this.agentDirOf(agent.id), UNCLAIMED_MARKER), { force: true });
    // Started before anyone's zone was known: told it now, as a running agent is when it changes.
    const zone = await this.options.userZone?.(userId);
    if (zone) await tellZone(agent, zone, this.log);
    this.poolClaims++;
    this.log.info({ agent: agent.name, agentId: agent.id }, 'new user served by a warm-pool agent');
    // A second later: a flood's first sign-ups are not yet a flood.
    this.fillPoolIn(FLOOD_WINDOW_MS);
    return agent;
  }

  /** Stops a pooled (or just unclaimable) agent and deletes its directory: it never served anyone. */
  private async discard(running: Running): Promise<void> {
    const { id } = running.agent;
    const inPool = this.pool.indexOf(running);
    if (inPool >= 0) this.pool.splice(inPool, 1);
    if (this.running.get(id) === running) this.running.delete(id);
    await this.stopProcess(running);
    await rm(this.agentDirOf(id), { recursive: true, force: true });
  }

  /** Directories of pooled agents a previous run left behind (it did not shut down cleanly); a claimed one only loses its mark. */
  private async removeUnclaimedLeftovers(): Promise<void> {
    const root = path.join(this.options.dataDir, 'agents');
    const entries = await readdir(root).catch(() => [] as string[]);
    for (const id of entries) {
      const marker = path.join(root, id, UNCLAIMED_MARKER);
      if (
        !(await stat(marker).then(
          () => true,
          () => false,
        ))
      )
        continue;
      const claimed = await this.registry.exists(id).catch(() => true);
      await rm(claimed ? marker : path.join(root, id), { recursive: true, force: true });
    }
  }

  /** Unexpected exits restart with backoff (1 s, 2 s, 4 s … 30 s); stops we asked for do not. */
  private onExit(running: Running, code: number | null, signal: NodeJS.Signals | null): void {
    const { agent } = running;
    releaseAgentConnections(running.url);
    if (this.closed || running.stopRequested) return;
    this.crashed++;
    if (running.pooled) {
      // Nobody's agent: not restarted, replaced (a start that keeps failing backs off in fillPool).
      this.log.warn({ agentId: agent.id, code, signal }, 'a warm-pool agent died');
      void this.discard(running).finally(() => this.fillPool());
      return;
    }
    if (this.running.get(agent.id) === running) this.running.delete(agent.id);

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

  /** The user's agent if it runs (a start under way is awaited); never starts one. */
  async awakeAgentOf(userId: string): Promise<AgentEndpoint | undefined> {
    const starting = this.starting.get(userId);
    if (starting) return starting.catch(() => undefined);
    const agent = await this.registry.forUser(userId);
    const running = agent && this.running.get(agent.id);
    return agent && running?.ready ? { ...agent, url: running.url } : undefined;
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
        if (!running.ready || running.pooled || Date.now() - running.lastUsed < idleMs) continue;
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
    const stopped = this.stopProcess(running).finally(() => {
      this.stopping.delete(id);
      // A slot is free: the pool may take it back.
      this.fillPool();
    });
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
    return { running: this.running.size, starting, evicted: this.evicted, crashed: this.crashed, pooled: this.pool.length, poolClaims: this.poolClaims };
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
      await rm(this.agentDirOf(agent.id), { recursive: true, force: true });
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
  processes(): Array<{ agentId: string; pid: number | undefined; url: string; pooled: boolean }> {
    return [...this.running].map(([agentId, r]) => ({ agentId, pid: r.child.pid, url: r.url, pooled: r.pooled }));
  }

  /** Stops every agent gracefully (runs get the grace period). Safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      if (this.sweeper) clearInterval(this.sweeper);
      clearTimeout(this.poolRetry);
      for (const state of this.restarts.values()) clearTimeout(state.timer);
      const running = [...this.running.values()];
      // Their next wake times, so that the scheduler (here or on another instance) keeps them.
      await Promise.all(running.filter((r) => r.ready && !r.pooled).map((r) => this.lifecycle(r).catch(() => undefined)));
      await Promise.all([...running.map((r) => this.stopProcess(r)), ...this.stopping.values()]);
      this.running.clear();
      // Pooled agents held nothing: their directories go with them.
      await Promise.all(running.filter((r) => r.pooled).map((r) => rm(this.agentDirOf(r.agent.id), { recursive: true, force: true })));
      this.pool.length = 0;
      await this.options.launcher.close();
    })();
    return this.closing;
  }
}
