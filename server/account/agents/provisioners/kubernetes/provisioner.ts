/**
 * `kubernetes`: each user's agent is a StatefulSet of 0 or 1 replicas in KUBE_NAMESPACE, with its
 * Secret, its workspace PVC and a headless Service (objects.ts), created, suspended, woken and
 * deleted by this service, which stays the only router: requests go to the Pod's IP, which a
 * watch keeps in memory, so a chat message costs no API call.
 *
 * - **Wake**: a request (or a heartbeat due, or a Telegram update) for a suspended agent sets
 *   replicas to 1 and waits for the Pod to be ready, at most KUBE_START_TIMEOUT (60 s); then 503
 *   AGENT_STARTING with Retry-After. Ready is the kubelet's readiness, or sooner `/health`
 *   answering this instance: once the container runs it is asked every 25 ms, since the kubelet
 *   probes only every second and an agent starts in a fraction of one. Several account instances may wake one agent at once: they
 *   all apply the same StatefulSet (server-side apply, one field manager), and the controller
 *   makes one Pod.
 * - **Suspend**: an agent unused for AGENT_IDLE_TIMEOUT (by any instance: the last use is an
 *   annotation, written at most a few times per idle period) that says it is idle (GET /lifecycle,
 *   as for local agents) goes to replicas 0: the Pod gets SIGTERM and AGENT_STOP_GRACE to finish
 *   what runs, the PVC stays. A Pod not serving yet is given KUBE_START_TIMEOUT besides (unusedFor).
 * - **Capacity**: AGENT_MAX_RUNNING counts the cluster's running agents (StatefulSets at 1, from
 *   the watch); at the cap the least recently used idle one is suspended, or the call gets 503
 *   AGENT_CAPACITY.
 * - **Crashes**: the kubelet restarts the container with its backoff; a restart seen on the watch
 *   is reported (`agent.crashed`).
 * - **Reconcile at start**: objects of agents the registry does not know (an account deleted by
 *   an instance that died half-way) are deleted; an agent whose objects are incomplete (an instance
 *   that died while creating them) gets the missing ones at its next wake, which creates whatever
 *   is absent.
 * - **Delete**: deleting an account deletes every object of its agent, then its registry row.
 *
 * The egress gateway listens on TCP (KUBE_EGRESS_PORT) for the pods; each agent authenticates
 * with its own token (objects.ts, egressToken), and no operator key ever enters a Pod.
 */
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  type Informer,
  type ObjectCache,
  type V1Pod,
  type V1StatefulSet,
} from '@kubernetes/client-node';
import { AppError } from '../../../../common/errors.js';
import type { Logger } from '../../../../common/log.js';
import { agentClient } from '../../client.js';
import type { EgressGateway, OpenGateway } from '../../egress/gateway.js';
import { newAgentSecret, type AgentEndpoint, type AgentRegistry } from '../../registry.js';
import { agentUnavailable, CAPACITY_RETRY_AFTER_SECONDS, type AgentStats, type SleepingAgents } from '../provisioner.js';
import {
  AGENT_POD_PORT,
  AGENT_SELECTOR,
  agentSecret,
  agentService,
  agentStatefulSet,
  agentVolumeClaim,
  egressToken,
  egressTokenChecker,
  FIELD_MANAGER,
  LABEL,
  LAST_USED_ANNOTATION,
  objectName,
  podName,
  type AgentIdentity,
  type AgentPodSettings,
} from './objects.js';

export interface KubernetesProvisionerOptions {
  /** KUBE_CONFIG: a kubeconfig file; unset: the service account of the Pod this runs in. */
  kubeconfig?: string;
  pod: AgentPodSettings;
  idleTimeoutSeconds: number;
  maxRunning?: number;
  /** KUBE_START_TIMEOUT: how long a call waits for a waking agent before 503 AGENT_STARTING. */
  startTimeoutMs: number;
  /** The gateway, and where it listens for the pods (KUBE_EGRESS_HOST, KUBE_EGRESS_PORT). */
  egress: { gateway: EgressGateway; host: string; port: number };
  /** Settings of the user's own (their bot), secret ones included: they go into the agent's Secret. */
  userEnv?: (userId: string) => Promise<Record<string, string>>;
  /** The settings that follow the account tier (workspace quota, task limits), into the Pod's environment. */
  tierEnv?: (userId: string) => Promise<Record<string, string>>;
  /** The user's time zone as the account keeps it: USER_TIMEZONE at start. */
  userZone?: (userId: string) => Promise<string | null>;
  onColdStart?: (seconds: number) => void;
  onCrash?: (userId: string, exit: { code: number | null; signal: NodeJS.Signals | null }) => void;
}

/** Setting names that are secrets: they go into the agent's Secret, never into its Pod spec (the agent's own rule, server/agent/secrets.ts). */
const SECRET_SETTING = /(SECRET|TOKEN|_KEY$)/;
/** Seconds a caller refused while its agent starts is told to wait. */
const STARTING_RETRY_AFTER_SECONDS = 5;
/** How often a waking agent's running container is asked for `/health`, and how long one ask may take. */
const HEALTH_POLL_MS = 25;
const HEALTH_TIMEOUT_MS = 1_000;

const isStatus = (error: unknown, code: number) => error instanceof ApiException && error.code === code;
const ignoreStatus = (code: number) => (error: unknown) => {
  if (!isStatus(error, code)) throw error;
};

type AddressedPod = V1Pod & { status: { podIP: string } };

function podReady(pod: V1Pod | undefined): pod is AddressedPod {
  if (!pod?.status?.podIP || pod.metadata?.deletionTimestamp) return false;
  return pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/**
 * The Pod's agent container as it runs now (its restarts counted), while it runs: what a `/health`
 * answer vouches for. A crash and restart is another one, which must answer again.
 */
function runningContainer(pod: V1Pod | undefined): string | undefined {
  const container = pod?.status?.containerStatuses?.[0];
  if (!pod?.status?.podIP || pod.metadata?.deletionTimestamp || !container?.state?.running) return undefined;
  return `${pod.metadata?.uid}/${container.restartCount}`;
}

const replicasOf = (set: V1StatefulSet | undefined) => set?.spec?.replicas ?? 0;

export class KubernetesProvisioner implements SleepingAgents {
  readonly agentKind = 'kubernetes';
  private readonly core: CoreV1Api;
  private readonly apps: AppsV1Api;
  private readonly namespace: string;
  private readonly pods: Informer<V1Pod> & ObjectCache<V1Pod>;
  private readonly sets: Informer<V1StatefulSet> & ObjectCache<V1StatefulSet>;
  /** Pod and StatefulSet changes, for waiters. */
  private readonly changes = new EventEmitter();
  /** Per agent, the running container (runningContainer) that answered this instance's `/health`. */
  private readonly answered = new Map<string, string>();
  private readonly starting = new Map<string, Promise<AgentEndpoint>>();
  /** Last use seen by this instance, and when it was last written to the annotation (ms). */
  private readonly used = new Map<string, { at: number; annotated: number }>();
  /** Restart counts seen, to report each crash once. */
  private readonly restartsSeen = new Map<string, number>();
  private readonly sweeper: NodeJS.Timeout | undefined;
  private gateway: (OpenGateway & { port: number }) | undefined;
  private sweeping = false;
  private closed = false;
  private evicted = 0;
  private crashed = 0;
  /** Requests this instance sent to the API server (watches counted once each): the bench's measure. */
  apiRequests = 0;

  constructor(
    private readonly registry: AgentRegistry,
    private readonly log: Logger,
    private readonly options: KubernetesProvisionerOptions,
  ) {
    const config = new KubeConfig();
    if (options.kubeconfig) config.loadFromFile(options.kubeconfig);
    else config.loadFromCluster();
    this.core = config.makeApiClient(CoreV1Api);
    this.apps = config.makeApiClient(AppsV1Api);
    this.namespace = options.pod.namespace;
    const namespace = this.namespace;
    this.pods = makeInformer(
      config,
      `/api/v1/namespaces/${namespace}/pods`,
      () => this.call(() => this.core.listNamespacedPod({ namespace, labelSelector: AGENT_SELECTOR })),
      AGENT_SELECTOR,
    );
    this.sets = makeInformer(
      config,
      `/apis/apps/v1/namespaces/${namespace}/statefulsets`,
      () => this.call(() => this.apps.listNamespacedStatefulSet({ namespace, labelSelector: AGENT_SELECTOR })),
      AGENT_SELECTOR,
    );
    for (const informer of [this.pods, this.sets] as Informer<V1Pod | V1StatefulSet>[]) {
      informer.on('add', () => this.changes.emit('change'));
      informer.on('update', () => this.changes.emit('change'));
      informer.on('delete', () => this.changes.emit('change'));
      // The informer re-lists and watches again after an error; waiters simply keep waiting.
      informer.on('error', (error: unknown) => {
        this.log.warn({ err: error }, 'kubernetes watch failed; restarting it');
        if (!this.closed) setTimeout(() => void informer.start().catch(() => undefined), 1_000).unref();
      });
    }
    this.pods.on('update', (pod) => this.noticeRestarts(pod));
    this.changes.setMaxListeners(0);
    const idleMs = options.idleTimeoutSeconds * 1000;
    if (idleMs > 0) {
      this.sweeper = setInterval(() => void this.sweep(), Math.min(Math.max(idleMs / 4, 250), 30_000));
      this.sweeper.unref();
    }
  }

  /** Watches, reconciles what the cluster holds against the registry, and opens the gateway for the pods. */
  async start(): Promise<void> {
    await Promise.all([this.pods.start(), this.sets.start()]);
    this.apiRequests += 2;
    for (const pod of this.pods.list()) this.restartsSeen.set(pod.metadata?.name ?? '', restartCount(pod));
    await this.reconcile();
    const { gateway, host, port } = this.options.egress;
    this.gateway = await gateway.listenTcp(
      { host, port },
      egressTokenChecker((id) => this.registry.byId(id)),
    );
  }

  /** The port the pods' egress gateway listens on (KUBE_EGRESS_PORT 0 picks one: tests). */
  get egressPort(): number | undefined {
    return this.gateway?.port;
  }

  async agentFor(userId: string): Promise<AgentEndpoint> {
    if (this.closed) throw agentUnavailable('The service is shutting down');
    const agent = (await this.registry.forUser(userId)) ?? (await this.register(userId));
    const pod = this.servingPod(agent.id);
    if (pod && replicasOf(this.setOf(agent.id)) > 0) {
      this.markUsed(agent.id);
      return { ...agent, url: podUrl(pod) };
    }
    let waking = this.starting.get(agent.id);
    if (!waking) {
      waking = this.bringUp(agent).finally(() => this.starting.delete(agent.id));
      this.starting.set(agent.id, waking);
    }
    return waking;
  }

  /** The registry row of a new user's agent: first, so that whatever is created after it is never an orphan. */
  private async register(userId: string): Promise<AgentEndpoint> {
    const id = randomUUID();
    try {
      return await this.registry.add({
        id,
        name: objectName(id),
        url: `kubernetes://${this.namespace}/${objectName(id)}`,
        secret: newAgentSecret(),
        kind: 'kubernetes',
        userId,
      });
    } catch (error) {
      // Another instance registered this user's agent at the same moment: that one is theirs.
      const existing = error instanceof AppError && error.appCode === 'AGENT_EXISTS' ? await this.registry.forUser(userId) : undefined;
      if (existing) return existing;
      throw error;
    }
  }

  /** Creates what is missing and sets replicas to 1, then waits for the Pod. */
  private async bringUp(agent: AgentEndpoint): Promise<AgentEndpoint> {
    const userId = agent.userId ?? '';
    const identity: AgentIdentity = { id: agent.id, userId };
    const started = performance.now();
    const wasRunning = replicasOf(this.setOf(agent.id)) > 0;
    if (!wasRunning) await this.admit(agent.id);
    const userEnv = await this.options.userEnv?.(userId);
    const secrets: Record<string, string> = { AGENT_SECRET: agent.secret, AGENT_EGRESS_TOKEN: egressToken(agent.id, agent.secret) };
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(userEnv ?? {})) (SECRET_SETTING.test(name) ? secrets : env)[name] = value;
    Object.assign(env, await this.options.tierEnv?.(userId));
    const zone = await this.options.userZone?.(userId);
    if (zone) env.USER_TIMEZONE = zone;
    if (!wasRunning) {
      // A heartbeat that fell due while it slept runs right after start.
      const nextWake = await this.registry.nextWake(agent.id);
      if (nextWake) env.HEARTBEAT_NEXT_AT = nextWake.toISOString();
    }
    const { namespace } = this;
    // Whatever is missing is created (a first start, or one an instance died in the middle of); what exists is kept.
    await this.apply(agentSecret(identity, namespace, secrets));
    await this.call(() => this.core.createNamespacedPersistentVolumeClaim({ namespace, body: agentVolumeClaim(identity, this.options.pod) })).catch(
      ignoreStatus(409),
    );
    await this.call(() => this.core.createNamespacedService({ namespace, body: agentService(identity, namespace) })).catch(ignoreStatus(409));
    if (!wasRunning) {
      // Used as of now, in the same write that scales it up: another instance's idle sweep or
      // eviction would otherwise take a Pod still starting (no use, no start time yet) for an idle one.
      const now = Date.now();
      this.used.set(agent.id, { at: now, annotated: now });
      await this.apply(agentStatefulSet(identity, this.options.pod, 1, env, new Date(now)));
    }
    const pod = await this.readyPod(agent.id);
    if (!wasRunning) this.options.onColdStart?.((performance.now() - started) / 1000);
    this.markUsed(agent.id, true);
    return { ...agent, url: podUrl(pod) };
  }

  /** Server-side apply: the same object from any instance is one object, never a conflict between them. */
  private async apply(body: { kind?: string; metadata?: { name?: string } }): Promise<void> {
    const name = body.metadata?.name ?? '';
    const options = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
    const request = { name, namespace: this.namespace, body, fieldManager: FIELD_MANAGER, force: true };
    if (body.kind === 'StatefulSet') await this.call(() => this.apps.patchNamespacedStatefulSet(request, options));
    else await this.call(() => this.core.patchNamespacedSecret(request, options));
  }

  /** The agent's Pod when it takes requests: ready for the kubelet, or its running container answered `/health` here. */
  private servingPod(agentId: string): AddressedPod | undefined {
    const pod = this.pods.get(podName(agentId), this.namespace);
    if (podReady(pod)) return pod;
    const container = runningContainer(pod);
    return container && this.answered.get(agentId) === container ? (pod as AddressedPod) : undefined;
  }

  /**
   * Resolves with the agent's Pod once it takes requests, or 503 AGENT_STARTING once the start
   * timeout passes. Waits for the kubelet's readiness (from the watch) and, while the container
   * runs, asks `/health` itself.
   */
  private readyPod(agentId: string): Promise<AddressedPod> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const check = () => {
        const pod = this.servingPod(agentId);
        if (!pod || settled) return;
        done();
        resolve(pod);
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new AppError(503, 'AGENT_STARTING', 'Your agent is starting; try again in a few seconds', { 'Retry-After': String(STARTING_RETRY_AFTER_SECONDS) }),
        );
      }, this.options.startTimeoutMs);
      const done = () => {
        settled = true;
        clearTimeout(timer);
        this.changes.off('change', check);
      };
      const poll = async () => {
        while (!settled && !this.closed) {
          const pod = this.pods.get(podName(agentId), this.namespace);
          const container = runningContainer(pod);
          if (container && (await answersHealth(podUrl(pod as AddressedPod)))) {
            this.answered.set(agentId, container);
            check();
          }
          if (!settled) await new Promise((wait) => setTimeout(wait, HEALTH_POLL_MS));
        }
      };
      this.changes.on('change', check);
      check();
      void poll();
    });
  }

  /** A slot under AGENT_MAX_RUNNING, suspending the least recently used idle agent when the cluster is at the cap. */
  private async admit(agentId: string): Promise<void> {
    const max = this.options.maxRunning;
    if (max === undefined) return;
    const running = this.runningSets().filter((set) => set.metadata?.labels?.[LABEL.agentId] !== agentId);
    if (running.length < max) return;
    const oldestFirst = running.sort((a, b) => this.lastUsed(a) - this.lastUsed(b));
    for (const set of oldestFirst) {
      const id = set.metadata?.labels?.[LABEL.agentId];
      if (!id || this.starting.has(id) || !this.unusedFor(set, 0)) continue;
      if (await this.suspendIfIdle(id)) {
        this.evicted++;
        return;
      }
    }
    throw new AppError(503, 'AGENT_CAPACITY', 'The service is busy: every agent it can run is working. Try again shortly.', {
      'Retry-After': String(CAPACITY_RETRY_AFTER_SECONDS),
    });
  }

  /** Asks the agent whether it is busy; idle (or mute) → replicas 0. */
  private async suspendIfIdle(agentId: string): Promise<boolean> {
    const pod = this.servingPod(agentId);
    if (pod) {
      const agent = await this.registry.byId(agentId);
      const report = agent
        ? await agentClient({ url: podUrl(pod), secret: agent.secret })
            .health.lifecycle.query(undefined, { signal: AbortSignal.timeout(5_000) })
            .catch(() => undefined)
        : undefined;
      if (report?.busy) {
        this.markUsed(agentId);
        return false;
      }
      if (report && agent) await this.registry.setNextWake(agentId, report.next_wake_at ? new Date(report.next_wake_at) : null);
    }
    await this.scale(agentId, 0);
    this.log.info({ agentId }, 'agent suspended');
    return true;
  }

  private async sweep(): Promise<void> {
    if (this.sweeping || this.closed) return;
    this.sweeping = true;
    try {
      const idleMs = this.options.idleTimeoutSeconds * 1000;
      for (const set of this.runningSets()) {
        const id = set.metadata?.labels?.[LABEL.agentId];
        if (!id || this.starting.has(id) || !this.unusedFor(set, idleMs)) continue;
        await this.suspendIfIdle(id);
      }
    } catch (error) {
      this.log.error({ err: error }, 'idle sweep failed');
    } finally {
      this.sweeping = false;
    }
  }

  /**
   * Whether the agent may be taken for idle: unused for `ms`, and, while its Pod does not serve
   * here, for the start timeout too. Another instance may be waiting for that Pod (a wake, a first
   * message), and on a loaded node a start can outlast a short idle timeout; suspending it then
   * would fail that wait, and a failed wake is tried again. A Pod that never serves is taken once
   * the start timeout has passed since its wake or its Pod's start.
   */
  private unusedFor(set: V1StatefulSet, ms: number): boolean {
    const unused = Date.now() - this.lastUsed(set);
    // With ms 0 (eviction at the cap) a last use a little ahead of this clock (another instance's) does not shield a serving agent.
    if (ms > 0 && unused < ms) return false;
    return this.servingPod(set.metadata?.labels?.[LABEL.agentId] ?? '') !== undefined || unused >= this.options.startTimeoutMs;
  }

  /** When the agent was last used: by this instance, by another (the annotation), or its Pod's start. */
  private lastUsed(set: V1StatefulSet): number {
    const id = set.metadata?.labels?.[LABEL.agentId] ?? '';
    const annotated = Date.parse(set.metadata?.annotations?.[LAST_USED_ANNOTATION] ?? '') || 0;
    const podStarted = Date.parse(String(this.pods.get(podName(id), this.namespace)?.status?.startTime ?? '')) || 0;
    return Math.max(this.used.get(id)?.at ?? 0, annotated, podStarted);
  }

  /** Notes a use; the annotation other instances read is written at most four times per idle period. */
  private markUsed(agentId: string, force = false): void {
    const now = Date.now();
    const entry = this.used.get(agentId) ?? { at: now, annotated: 0 };
    entry.at = now;
    this.used.set(agentId, entry);
    const every = (this.options.idleTimeoutSeconds * 1000) / 4;
    if (every <= 0 || (!force && now - entry.annotated < every)) return;
    entry.annotated = now;
    const body = { metadata: { annotations: { [LAST_USED_ANNOTATION]: new Date(now).toISOString() } } };
    this.call(() =>
      this.apps.patchNamespacedStatefulSet(
        { name: objectName(agentId), namespace: this.namespace, body },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    ).catch((error: unknown) => this.log.warn({ err: error, agentId }, 'recording the last use failed'));
  }

  private async scale(agentId: string, replicas: 0 | 1): Promise<void> {
    // A suspended agent's next container answers anew (and the map keeps only running agents).
    if (replicas === 0) this.answered.delete(agentId);
    await this.call(() =>
      this.apps.patchNamespacedStatefulSet(
        { name: objectName(agentId), namespace: this.namespace, body: { spec: { replicas } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    ).catch(ignoreStatus(404));
  }

  private setOf(agentId: string): V1StatefulSet | undefined {
    return this.sets.get(objectName(agentId), this.namespace);
  }

  private runningSets(): V1StatefulSet[] {
    return this.sets.list(this.namespace).filter((set) => replicasOf(set) > 0);
  }

  private noticeRestarts(pod: V1Pod): void {
    const name = pod.metadata?.name ?? '';
    const count = restartCount(pod);
    const seen = this.restartsSeen.get(name) ?? 0;
    this.restartsSeen.set(name, count);
    if (count <= seen) return;
    this.crashed++;
    const terminated = pod.status?.containerStatuses?.[0]?.lastState?.terminated;
    const userId = pod.metadata?.labels?.[LABEL.userId];
    this.log.warn({ pod: name, exitCode: terminated?.exitCode, reason: terminated?.reason }, 'agent container restarted after a crash');
    if (userId) this.options.onCrash?.(userId, { code: terminated?.exitCode ?? null, signal: null });
  }

  /** Deletes the objects of agents the registry does not know: what an instance that died while deleting an account left. */
  private async reconcile(): Promise<void> {
    const { namespace } = this;
    const labelSelector = AGENT_SELECTOR;
    const [secrets, claims, services] = await Promise.all([
      this.call(() => this.core.listNamespacedSecret({ namespace, labelSelector })),
      this.call(() => this.core.listNamespacedPersistentVolumeClaim({ namespace, labelSelector })),
      this.call(() => this.core.listNamespacedService({ namespace, labelSelector })),
    ]);
    const ids = new Set<string>();
    for (const item of [...secrets.items, ...claims.items, ...services.items, ...this.sets.list(namespace)]) {
      const id = item.metadata?.labels?.[LABEL.agentId];
      if (id) ids.add(id);
    }
    let removed = 0;
    for (const id of ids) {
      if (await this.registry.exists(id)) continue;
      await this.deleteObjects(id);
      removed++;
    }
    if (removed > 0) this.log.warn({ removed }, 'deleted the objects of agents no account owns (left by an interrupted deletion)');
  }

  private async deleteObjects(agentId: string): Promise<void> {
    const { namespace } = this;
    const name = objectName(agentId);
    const gone = ignoreStatus(404);
    await this.call(() => this.apps.deleteNamespacedStatefulSet({ name, namespace, propagationPolicy: 'Background' })).catch(gone);
    await this.call(() => this.core.deleteNamespacedService({ name, namespace })).catch(gone);
    await this.call(() => this.core.deleteNamespacedSecret({ name, namespace })).catch(gone);
    await this.call(() => this.core.deleteNamespacedPersistentVolumeClaim({ name: `${name}-workspace`, namespace })).catch(gone);
    this.used.delete(agentId);
  }

  async deleteAgentOf(userId: string): Promise<void> {
    const agent = await this.registry.forUser(userId);
    if (!agent) return;
    await this.starting.get(agent.id)?.catch(() => undefined);
    await this.deleteObjects(agent.id);
    await this.registry.remove(agent.name);
    this.log.info({ agent: agent.name }, 'account deleted: agent objects and workspace deleted');
  }

  async stopAgentOf(userId: string): Promise<boolean> {
    const agent = await this.registry.forUser(userId);
    if (!agent || replicasOf(this.setOf(agent.id)) === 0) return false;
    await this.scale(agent.id, 0);
    return true;
  }

  /** Suspends the agent so that its next start reads its settings again; `start` wakes it right away. */
  async restart(userId: string, opts: { start: boolean }): Promise<void> {
    const agent = await this.registry.forUser(userId);
    const running = agent !== undefined && replicasOf(this.setOf(agent.id)) > 0;
    if (agent && running) {
      await this.scale(agent.id, 0);
      await this.podGone(agent.id);
    }
    if (opts.start || running) await this.agentFor(userId);
  }

  /** The user's agent if its Pod serves (a start under way is awaited); never starts one. */
  async awakeAgentOf(userId: string): Promise<AgentEndpoint | undefined> {
    const agent = await this.registry.forUser(userId);
    if (!agent) return undefined;
    const starting = this.starting.get(agent.id);
    if (starting) return starting.catch(() => undefined);
    const pod = this.servingPod(agent.id);
    return pod && replicasOf(this.setOf(agent.id)) > 0 ? { ...agent, url: podUrl(pod) } : undefined;
  }

  /** Wakes the user's agent for its schedule unless it runs. */
  async wake(userId: string): Promise<void> {
    const agent = await this.registry.forUser(userId);
    if (agent && replicasOf(this.setOf(agent.id)) > 0) return;
    await this.agentFor(userId);
  }

  /** At sign-in: a returning user's suspended agent starts now, not at the first message. */
  async warmUp(userId: string, opts: { created?: boolean } = {}): Promise<void> {
    // A new account's agent is made by its first call.
    if (!opts.created && (await this.registry.forUser(userId))) await this.agentFor(userId).catch(() => undefined);
  }

  private podGone(agentId: string): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (this.pods.get(podName(agentId), this.namespace)) return;
        this.changes.off('change', check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(check, (this.options.pod.stopGraceSeconds + 10) * 1000);
      this.changes.on('change', check);
      check();
    });
  }

  stats(): AgentStats {
    const running = this.runningSets();
    const starting = running.filter((set) => !this.servingPod(set.metadata?.labels?.[LABEL.agentId] ?? '')).length;
    return { running: running.length, starting, evicted: this.evicted, crashed: this.crashed, pooled: 0, poolClaims: 0 };
  }

  /** Stops watching and closes the pods' gateway; the agents outlive this instance. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweeper);
    await Promise.all([this.pods.stop(), this.sets.stop()]);
    await this.gateway?.close();
  }

  private call<T>(request: () => Promise<T>): Promise<T> {
    this.apiRequests++;
    return request();
  }
}

/** Whether the agent at `url` answers `/health` (the readiness probe's path) with a success. */
async function answersHealth(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

const podUrl = (pod: { status: { podIP: string } }) =>
  `http://${pod.status.podIP.includes(':') ? `[${pod.status.podIP}]` : pod.status.podIP}:${AGENT_POD_PORT}`;

const restartCount = (pod: V1Pod) => pod.status?.containerStatuses?.reduce((sum, status) => sum + status.restartCount, 0) ?? 0;
