/**
 * The agents' part of the account service, built once at start (services.ts puts it beside the
 * rest): the registry and its sealed secrets, the provisioner the configuration names (local,
 * static or Kubernetes, egress/ and proxy/ beside it), the egress gateway with the model budgets,
 * the proxy's per-user slots, and the agents' metrics. What it needs of the other areas comes in
 * as functions: whether a user is on guest terms (users/), their agent's extra environment (their
 * bot's settings, messenger/), their connector calls (connectors/), so that no other area is imported here.
 */
import type { ModelSource } from '@contracts/agent/model-source.js';
import { Counter, Histogram } from 'prom-client';
import type { Logger } from '../../common/log.js';
import type { ServiceMetrics } from '../../common/metrics.js';
import type { AccountConfig } from '../config.js';
import type { AgentsConfig } from './config.js';
import { emitEvent } from '../events/outbox.js';
import type { AccountStore } from '../store.js';
import { LocalAgentsScrape } from './agent-metrics.js';
import type { ConnectorCalls } from './egress/connectors.js';
import { EgressGateway, agentModelEnvironment, egressRoutes } from './egress/gateway.js';
import { ModelBudget, type BudgetUser } from './egress/model-usage.js';
import { WebTools } from './egress/web.js';
import { webLedger } from './egress/web-ledger.js';
import { AgentMetrics } from './metrics.js';
import type { KubernetesProvisioner, KubernetesProvisionerOptions } from './provisioners/kubernetes/provisioner.js';
import { AgentLauncher } from './provisioners/local/launcher.js';
import { LocalProvisioner, agentEnvironment } from './provisioners/local/provisioner.js';
import { isSleepingAgents, type AgentProvisioner, type SleepingAgents } from './provisioners/provisioner.js';
import { StaticProvisioner } from './provisioners/static.js';
import { WakeScheduler } from './provisioners/wake-scheduler.js';
import { requestSlots, streamSlots, type UserSlots } from './proxy/user-slots.js';
import { AgentRegistry } from './registry.js';
import { loadSecretBox, type SecretBox } from './secrets.js';

export interface AgentsDeps {
  /** The agents' settings, and where this service keeps its data and how long it waits for bodies (the agents wait as long). */
  config: AgentsConfig & Pick<AccountConfig, 'dataDir' | 'bodyTimeouts' | 'port' | 'baseUrl' | 'frontendUrl'>;
  log: Logger;
  store: AccountStore;
  metrics: ServiceMetrics;
  /** Whether a user is on guest terms (users/identities.ts), and their own budget overrides; an unknown user is a guest. */
  budgetUser(userId: string): Promise<BudgetUser>;
  /** Added to the environment of a user's agent when it starts (their own bot's settings). */
  userEnv(userId: string): Promise<Record<string, string>>;
  /** The users' connector tools and calls, which their agents reach through the gateway (connectors/). */
  connectors?: ConnectorCalls;
  /** The user's time zone as the account keeps it (user-zone.ts). */
  userZone(userId: string): Promise<string | null>;
}

export interface Agents {
  registry: AgentRegistry;
  provisioner: AgentProvisioner;
  /** The provisioner, when it lets agents sleep and wakes them (local, Kubernetes). */
  sleeping: SleepingAgents | undefined;
  /** Seals agent secrets in the registry (and what else is sealed at rest: bot tokens, webhook secrets). */
  box: SecretBox;
  modelBudget: ModelBudget;
  agentMetrics: AgentMetrics;
  localAgentsScrape: LocalAgentsScrape;
  streamSlots: UserSlots;
  requestSlots: UserSlots;
  /** Sleeping agents are started when their next heartbeat is due, from now on. */
  startWaking(): void;
  stopWaking(): Promise<void>;
}

export async function assembleAgents({ config, log, store, metrics, budgetUser, userEnv, userZone, connectors }: AgentsDeps): Promise<Agents> {
  const modelTokens = new Counter({
    name: 'model_tokens_total',
    help: 'Model tokens spent by local agents, by direction and kind of user',
    labelNames: ['direction', 'user'],
    registers: [metrics.registry],
  });
  const modelCalls = new Histogram({
    name: 'model_call_duration_seconds',
    help: "Local agents' model calls through the egress gateway, from request to the answer's end, by status class",
    labelNames: ['status'],
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [metrics.registry],
  });
  const egressLimited = new Counter({
    name: 'agent_egress_limited_total',
    help: "Agents' egress tunnels and requests refused or cut by a limit (connections, body, idle, duration)",
    labelNames: ['limit'],
    registers: [metrics.registry],
  });
  const isGuest = async (userId: string) => (await budgetUser(userId)).guest;
  const modelBudget = new ModelBudget(store.sql, config.modelBudget, budgetUser, (usage, guest) => {
    modelTokens.inc({ direction: 'in', user: guest ? 'guest' : 'account' }, usage.tokensIn);
    modelTokens.inc({ direction: 'out', user: guest ? 'guest' : 'account' }, usage.tokensOut);
  });
  const modelMeter = {
    reserve: (userId: string, tokens: number, source: ModelSource) => modelBudget.reserve(userId, tokens, source),
    proactive: (userId: string, tokens: number) => modelBudget.proactive(userId, tokens),
    observe: (seconds: number, status: number) => modelCalls.observe({ status: status ? `${Math.floor(status / 100)}xx` : 'none' }, seconds),
  };
  const agentMetrics = new AgentMetrics(metrics);
  const box = await loadSecretBox(config.agentSecretsKey, config.dataDir);
  const registry = new AgentRegistry(store.db, box);
  // The settings that follow the account tier: the workspace quota and the scheduled-task limits.
  const termsEnv = (tier: 'guest' | 'account') => ({
    AGENT_WORKSPACE_QUOTA_MB: String(config.workspaceQuotaMb[tier]),
    TASKS_MAX: String(config.taskLimits[tier].max),
    TASK_MIN_INTERVAL: String(config.taskLimits[tier].minIntervalSeconds),
  });
  const tierEnv = async (userId: string) => termsEnv((await isGuest(userId)) ? 'guest' : 'account');
  // A crash changes no row: its event is a statement of its own (events/outbox.ts).
  const onCrash = (userId: string, exit: { code: number | null; signal: NodeJS.Signals | null }) => {
    emitEvent(store.db, { type: 'agent.crashed', data: { user_id: userId, exit_code: exit.code, signal: exit.signal } }).catch((error: unknown) =>
      log.warn({ err: error }, 'writing the agent.crashed webhook event failed'),
    );
  };
  const web = webTools(config, store, isGuest, metrics, log);
  const egressGateway = new EgressGateway(egressRoutes(config.egress), log, {
    meter: modelMeter,
    modelCallMaxTokens: config.modelCallMaxTokens,
    limits: config.egressLimits,
    onLimited: (limit) => egressLimited.inc({ limit }),
    connectors,
    web,
  });
  // What every agent inherits: runtime settings and the model's (never a key: the gateway adds those).
  const agentEnv = {
    ...agentEnvironment(process.env),
    ...agentModelEnvironment(config.egress),
    // Which web tools the agents offer their model: the gateway answers exactly these.
    AGENT_WEB_TOOLS: web.offered.join(','),
    // The agents hold bodies to the same timeouts as this service.
    REQUEST_BODY_TIMEOUT: String(config.bodyTimeouts.requestSeconds),
    UPLOAD_IDLE_TIMEOUT_SECONDS: String(config.bodyTimeouts.uploadIdleSeconds),
  };
  const provisioner: AgentProvisioner =
    config.agentProvisioner === 'static'
      ? new StaticProvisioner(registry, log)
      : config.agentProvisioner === 'kubernetes'
        ? await startKubernetesProvisioner(registry, log, {
            kubeconfig: config.kubernetes.kubeconfig,
            pod: {
              namespace: config.kubernetes.namespace,
              image: config.kubernetes.image,
              command: config.kubernetes.command,
              runtimeClass: config.kubernetes.runtimeClass,
              storageClass: config.kubernetes.storageClass,
              workspaceSize: config.kubernetes.workspaceSize,
              egressUrl: config.kubernetes.egressUrl,
              memoryMb: config.agentLauncher.memoryBytes / 1024 / 1024,
              cpuPercent: config.agentLauncher.cpuPercent,
              tmpMb: config.agentLauncher.tmpBytes / 1024 / 1024,
              stopGraceSeconds: config.agentStopGraceMs / 1000,
              env: stringsOf(agentEnv),
            },
            idleTimeoutSeconds: config.agentIdleTimeoutSeconds,
            maxRunning: config.kubernetes.maxRunning,
            startTimeoutMs: config.kubernetes.startTimeoutMs,
            egress: { gateway: egressGateway, host: config.kubernetes.egressHost, port: config.kubernetes.egressPort },
            userEnv,
            tierEnv,
            userZone,
            onColdStart: (seconds) => agentMetrics.coldStart(seconds),
            onCrash,
          })
        : new LocalProvisioner(registry, log, {
            dataDir: config.dataDir,
            idleTimeoutSeconds: config.agentIdleTimeoutSeconds,
            stopGraceMs: config.agentStopGraceMs,
            maxRunning: config.agentMaxRunning,
            agentEnv,
            launcher: new AgentLauncher(config.agentLauncher, egressGateway, log),
            userEnv,
            tierEnv,
            userZone,
            onColdStart: (seconds) => agentMetrics.coldStart(seconds),
            warmPool: { size: config.agentWarmPool, tierEnv: termsEnv('guest') },
            onCrash,
          });
  agentMetrics.watch(provisioner);
  const sleeping = isSleepingAgents(provisioner) ? provisioner : undefined;
  const localAgentsScrape = new LocalAgentsScrape(metrics, () => (provisioner instanceof LocalProvisioner ? provisioner.runningAgents() : []));
  const wakes = sleeping ? new WakeScheduler(store.db, sleeping, log, { pollMs: config.agentWakePollMs, kind: sleeping.agentKind }) : undefined;
  return {
    registry,
    provisioner,
    sleeping,
    box,
    modelBudget,
    agentMetrics,
    localAgentsScrape,
    streamSlots: streamSlots(config.agentStreamsPerUser),
    requestSlots: requestSlots(config.agentRequestsPerUser),
    startWaking: () => wakes?.start(),
    stopWaking: async () => {
      await wakes?.close();
    },
  };
}

/** The agents' web tools on the gateway: the operator's policy, this service's own addresses, each user's daily counts and activity, metrics per tool. */
function webTools(
  config: AgentsDeps['config'],
  store: AccountStore,
  isGuest: (userId: string) => Promise<boolean>,
  metrics: ServiceMetrics,
  log: Logger,
): WebTools {
  const calls = new Counter({
    name: 'agent_web_calls_total',
    help: "Agents' web_fetch and web_search calls through the egress gateway, by tool and outcome (ok, refused, limited, failed)",
    labelNames: ['tool', 'outcome'],
    registers: [metrics.registry],
  });
  const seconds = new Histogram({
    name: 'agent_web_call_duration_seconds',
    help: "Agents' web tool calls through the egress gateway, from request to the answer's end, by tool",
    labelNames: ['tool'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [metrics.registry],
  });
  const { policy, keys, daily } = config.web;
  if (policy.testPublic.length > 0)
    log.warn({ addresses: policy.testPublic }, 'AGENT_WEB_TEST_PUBLIC: the web tools treat these non-public addresses as public (tests only)');
  const own = {
    ports: [config.port, config.kubernetes.egressPort],
    hosts: [new URL(config.baseUrl).hostname, new URL(config.frontendUrl).hostname],
  };
  return new WebTools(policy, own, log.child({ area: 'web' }), {
    ledger: webLedger(store.db, daily, isGuest),
    keys,
    observe: (tool, outcome, took) => {
      calls.inc({ tool, outcome });
      seconds.observe({ tool }, took);
    },
  });
}

/** Loaded only when configured: the Kubernetes client is large, and a local start stays fast without it. */
async function startKubernetesProvisioner(registry: AgentRegistry, log: Logger, options: KubernetesProvisionerOptions): Promise<KubernetesProvisioner> {
  const { KubernetesProvisioner } = await import('./provisioners/kubernetes/provisioner.js');
  const provisioner = new KubernetesProvisioner(registry, log, options);
  await provisioner.start();
  return provisioner;
}

const stringsOf = (env: NodeJS.ProcessEnv): Record<string, string> =>
  Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
