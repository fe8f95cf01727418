/**
 * Every user has one agent; a provisioner finds it (and starts it when that is its job). The
 * registry, the proxy, the egress gateway and the budgets are shared and know no provisioner's
 * details; each kind lives beside the others in this folder:
 *
 * - `local` (default, local/): one sandboxed process per user on this machine.
 * - `static` (static.ts): agents run elsewhere and are registered and assigned with `npm run agents`.
 * - `kubernetes` (kubernetes/): one StatefulSet of 0 or 1 replicas per user in a cluster.
 *
 * A provisioner of machines elsewhere implements the same interface: `agentFor` creates or wakes the
 * user's agent (registering its URL and secret in the registry on creation) and resolves once its
 * /health answers; `close` releases local resources only — such agents outlive the account service.
 */
import { AppError } from '../../../common/errors.js';
import type { AgentEndpoint } from '../registry.js';

export interface AgentProvisioner {
  /** The user's agent, ready to take requests. */
  agentFor(userId: string): Promise<AgentEndpoint>;
  /** Agents on this machine: running (starting ones included), starting, stopped to make room, crashed (local agents only). */
  stats?(): AgentStats;
  /** The user's account is being deleted: stop its agent and delete its workspace, or hand a shared one back. */
  deleteAgentOf(userId: string): Promise<void>;
  /** An operator's stop (admin API, a ban): stop the user's agent if it runs; its next use starts it again. False: nothing ran here. */
  stopAgentOf?(userId: string): Promise<boolean>;
  /** The agents running here, for operators (admin API); absent where this service does not run them. */
  listRunning?(): RunningAgentInfo[];
  close(): Promise<void>;
}

/** A provisioner whose agents sleep and wake (local, kubernetes): bots, heartbeats and sign-ins wake them. */
export interface SleepingAgents extends AgentProvisioner {
  /** The registry kind of the agents it starts (`agents.kind`): the wake scheduler wakes those. */
  readonly agentKind: string;
  /** Stops the user's agent if it runs so its next start reads its settings again (`start`: and starts it). */
  restart(userId: string, opts: { start: boolean }): Promise<void>;
  /** Starts the user's agent for its schedule unless it runs. */
  wake(userId: string): Promise<void>;
  /** The user's agent if it runs now (a start under way is awaited); never starts one: whom to tell a changed setting. */
  awakeAgentOf(userId: string): Promise<AgentEndpoint | undefined>;
  /**
   * After a sign-in: starts a returning user's sleeping agent ahead of the first message.
   * `created`: the sign-in made the account, so it has no agent yet (nothing to look up).
   */
  warmUp(userId: string, opts?: { created?: boolean }): Promise<void>;
}

export const isSleepingAgents = (provisioner: AgentProvisioner): provisioner is SleepingAgents =>
  'agentKind' in provisioner && 'restart' in provisioner && 'wake' in provisioner && 'warmUp' in provisioner;

export interface RunningAgentInfo {
  agentId: string;
  name: string;
  userId: string | null;
  url: string;
  secret: string;
  pid: number | undefined;
  startedAt: Date;
  lastUsedAt: Date;
}

export interface AgentStats {
  running: number;
  starting: number;
  evicted: number;
  crashed: number;
  /** Warm-pool agents started and waiting for a new user (counted in `running` too). */
  pooled: number;
  /** New users served by a warm-pool agent. */
  poolClaims: number;
}

/** Seconds a caller refused for capacity is told to wait (about one idle-sweep round). */
export const CAPACITY_RETRY_AFTER_SECONDS = 10;

export const agentUnavailable = (detail: string) => new AppError(503, 'AGENT_UNAVAILABLE', detail);
