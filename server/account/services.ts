/**
 * Everything the account procedures work with, built once at start and closed at stop.
 * Domain modules take what they need from here as explicit arguments.
 */
import path from 'node:path';
import { Counter, Histogram } from 'prom-client';
import type { Logger } from '../common/log.js';
import { createMetrics, type ServiceMetrics } from '../common/metrics.js';
import { createFilesPrivately, privateDir } from '../common/private-files.js';
import { EgressGateway, agentModelEnvironment, egressRoutes } from './agents/egress/gateway.js';
import { AgentLauncher } from './agents/provisioners/local/launcher.js';
import { emitEvent } from './events/outbox.js';
import { WebhookWorker } from './admin/webhooks/worker.js';
import type { SecretBox } from './agents/secrets.js';
import { AdminAccess } from './admin/access.js';
import { promoteAdminEmails } from './users/roles.js';
import { AuthMetrics } from './auth-metrics.js';
import { ModelBudget } from './agents/egress/model-usage.js';
import { requestSlots, streamSlots, type UserSlots } from './agents/proxy/user-slots.js';
import { LocalProvisioner, agentEnvironment } from './agents/provisioners/local/provisioner.js';
import { isSleepingAgents, type AgentProvisioner } from './agents/provisioners/provisioner.js';
import type { KubernetesProvisioner, KubernetesProvisionerOptions } from './agents/provisioners/kubernetes/provisioner.js';
import { StaticProvisioner } from './agents/provisioners/static.js';
import { AgentRegistry } from './agents/registry.js';
import { AgentMetrics } from './agents/metrics.js';
import { LocalAgentsScrape } from './agents/agent-metrics.js';
import { WakeScheduler } from './agents/provisioners/wake-scheduler.js';
import { MessengerBots } from './messenger/bots.js';
import { loadSecretBox } from './agents/secrets.js';
import { loadEmailCodeKey } from './auth/email/codes.js';
import { MailQueue, outboxTransport, smtpTransport } from './auth/email/mail.js';
import { EmailSignIn } from './auth/email/service.js';
import { JsonRpcClient, type WalletRpc } from './auth/wallet/rpc.js';
import type { AccountConfig } from './config.js';
import { OAuthProviders } from './auth/oauth/providers.js';
import { RateLimits } from './ratelimit/limits.js';
import { Captcha } from './captcha/siteverify.js';
import { openAccountStore, type AccountStore } from './store.js';
import { loadSigningKeys } from './tokens/keys.js';
import { TokenService } from './tokens/service.js';
import { pruneActivity } from './events/activity.js';
import { onGuestTerms } from './users/identities.js';
import { GuestRetention } from './users/retention.js';

export interface AccountServices {
  config: AccountConfig;
  log: Logger;
  store: AccountStore;
  tokens: TokenService;
  rateLimits: RateLimits;
  agents: { registry: AgentRegistry; provisioner: AgentProvisioner };
  /** Users' own Telegram bots (local agents only). */
  bots: MessengerBots | undefined;
  /** Outgoing mail: SMTP_URL, or the local outbox. */
  mail: MailQueue;
  email: EmailSignIn;
  /** Provider A and B for browser OAuth and native ID tokens (discovery cached). */
  oauth: OAuthProviders;
  /** Unset when CAPTCHA_PROVIDER is not. */
  captcha: Captcha | undefined;
  /** The chain's JSON-RPC endpoint for smart-wallet signatures, one client for the service; unset without RPC_URL. */
  walletRpc: WalletRpc | undefined;
  /**
   * Aborted once the service starts stopping (SIGTERM): /readyz answers 503 and relayed chat
   * streams end with `reconnect` (the runs go on on the agents; clients follow them elsewhere).
   */
  shutdown: AbortSignal;
  beginShutdown(): void;
  /** Stops the wake scheduler, then every agent, gracefully (safe to call again from close). */
  stopAgents(): Promise<void>;
  /** Prometheus metrics (GET /metrics); domain modules add their counters to its registry. */
  metrics: ServiceMetrics;
  /** Who may call the admin API, checked on every call (admin/access.ts). */
  adminAccess: AdminAccess;
  /** Sign-ins, refreshes and rate-limit refusals, counted for GET /metrics (auth-metrics.ts). */
  authMetrics: AuthMetrics;
  /** Agents' starts, crashes and cold starts, proxy latency and relayed streams (agents/metrics.ts). */
  agentMetrics: AgentMetrics;
  /** Relayed event streams per user, capped (agents/proxy/user-slots.ts). */
  streamSlots: UserSlots;
  /** Other REST requests per user in flight to their agent, capped (agents/proxy/user-slots.ts). */
  requestSlots: UserSlots;
  /** The running local agents' own series, summed into GET /metrics (agents/agent-metrics.ts). */
  localAgentsScrape: LocalAgentsScrape;
  /** Model tokens per user and day, and the daily budgets (agents/egress/model-usage.ts). */
  modelBudget: ModelBudget;
  /** Webhook endpoints' secrets are sealed with `box`; `worker` delivers the outbox (admin/webhooks/). */
  webhooks: { worker: WebhookWorker; box: SecretBox; allowPrivate: boolean };
  /** The hourly sweep of abandoned guests (users/retention.ts); unset with GUEST_RETENTION_DAYS=0. */
  guestRetention?: GuestRetention;
  close(): Promise<void>;
}

export async function createAccountServices(config: AccountConfig, log: Logger): Promise<AccountServices> {
  createFilesPrivately();
  await privateDir(config.dataDir, log);
  const store = await openAccountStore(config);
  log.info({ kind: store.kind, applied: store.appliedMigrations }, 'account store open');
  await promoteAdminEmails(store.db, config.adminEmails);
  const keys = await loadSigningKeys(config.signingKeysFile);
  const tokens = new TokenService(store, { keys, issuer: config.baseUrl, audience: config.baseUrl }, log, {
    metadataClaim: config.tokenMetadataClaim,
    adminEmails: config.adminEmails,
  });
  const metrics = createMetrics('account');
  const authMetrics = new AuthMetrics(metrics.registry);
  const rateLimits = new RateLimits({
    onRefused: (name) => authMetrics.refused(name),
    redisUrl: config.redisUrl,
    multiplier: config.rateLimitMultiplier,
    ipv6Subnet: config.ipv6Subnet,
    limits: { 'guest.signups.client.daily': config.guestSignupsPerDay, 'guest.signups.hourly': config.guestSignupsPerHour },
  });
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
  // Guest terms (budgets, quota) for every account not `full` (users/identities.ts); an unknown user gets them too.
  const budgetUser = async (userId: string) => {
    const user = await store.db.user.findUnique({ where: { id: userId }, select: { tier: true, modelDailyTokens: true, guestMessagesPerDay: true } });
    return { guest: onGuestTerms(user?.tier ?? 'guest'), dailyTokens: user?.modelDailyTokens, guestMessagesPerDay: user?.guestMessagesPerDay };
  };
  const isGuest = async (userId: string) => (await budgetUser(userId)).guest;
  const modelBudget = new ModelBudget(store.sql, config.modelBudget, budgetUser, (usage, guest) => {
    modelTokens.inc({ direction: 'in', user: guest ? 'guest' : 'account' }, usage.tokensIn);
    modelTokens.inc({ direction: 'out', user: guest ? 'guest' : 'account' }, usage.tokensOut);
  });
  const modelMeter = {
    reserve: (userId: string, tokens: number) => modelBudget.reserve(userId, tokens),
    observe: (seconds: number, status: number) => modelCalls.observe({ status: status ? `${Math.floor(status / 100)}xx` : 'none' }, seconds),
  };
  const agentMetrics = new AgentMetrics(metrics);
  const box = await loadSecretBox(config.agentSecretsKey, config.dataDir);
  const registry = new AgentRegistry(store.db, box);
  // Bound below: the bots need the provisioner, the provisioner asks them for an agent's bot settings.
  let bots: MessengerBots | undefined;
  const userEnv = async (userId: string) => (bots ? bots.agentEnv(userId) : {});
  const workspaceQuotaMb = async (userId: string) => ((await isGuest(userId)) ? config.workspaceQuotaMb.guest : config.workspaceQuotaMb.account);
  // A crash changes no row: its event is a statement of its own (events/outbox.ts).
  const onCrash = (userId: string, exit: { code: number | null; signal: NodeJS.Signals | null }) => {
    emitEvent(store.db, { type: 'agent.crashed', data: { user_id: userId, exit_code: exit.code, signal: exit.signal } }).catch((error: unknown) =>
      log.warn({ err: error }, 'writing the agent.crashed webhook event failed'),
    );
  };
  const egressGateway = new EgressGateway(egressRoutes(config.egress), log, {
    meter: modelMeter,
    modelCallMaxTokens: config.modelCallMaxTokens,
    limits: config.egressLimits,
    onLimited: (limit) => egressLimited.inc({ limit }),
  });
  // What every agent inherits: runtime settings and the model's (never a key: the gateway adds those).
  const agentEnv = {
    ...agentEnvironment(process.env),
    ...agentModelEnvironment(config.egress),
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
            workspaceQuotaMb,
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
            workspaceQuotaMb,
            onColdStart: (seconds) => agentMetrics.coldStart(seconds),
            warmPool: { size: config.agentWarmPool, workspaceQuotaMb: config.workspaceQuotaMb.guest },
            onCrash,
          });
  agentMetrics.watch(provisioner);
  // After a sign-in's answer, a returning user's sleeping agent starts, a new one's comes from the warm pool: ready before the first message.
  const sleeping = isSleepingAgents(provisioner) ? provisioner : undefined;
  if (sleeping) tokens.signedIn = ({ userId, created }) => void sleeping.warmUp(userId, { created });
  const localAgentsScrape = new LocalAgentsScrape(metrics, () => (provisioner instanceof LocalProvisioner ? provisioner.runningAgents() : []));
  if (sleeping) {
    bots = new MessengerBots(store.db, box, sleeping, log, {
      telegramApiRoot: config.egress.telegramApiRoot.replace(/\/+$/, ''),
      webhookBase: config.telegramWebhookBase,
    });
  }
  // Sleeping agents (local or in Pods) are started when their next heartbeat is due.
  const wakes = sleeping ? new WakeScheduler(store.db, sleeping, log, { pollMs: config.agentWakePollMs, kind: sleeping.agentKind }) : undefined;
  wakes?.start();
  const codeKey = await loadEmailCodeKey(path.join(config.dataDir, 'email-code-key'));
  const mail = new MailQueue(config.smtpUrl ? smtpTransport(config.smtpUrl, config.mailFrom) : outboxTransport(config.outboxDir, config.mailFrom, log), log);
  if (!config.smtpUrl) log.info({ outbox: config.outboxDir }, 'no SMTP_URL: mail is written to the local outbox');
  // Activity older than 90 days goes hourly, in the background; a failure only delays it.
  const pruning = setInterval(
    () => {
      pruneActivity(store.db).catch((error: unknown) => log.warn({ err: error }, 'pruning old activity failed'));
    },
    60 * 60 * 1000,
  );
  pruning.unref();
  const email = new EmailSignIn({ db: store.db, tokens, mail, codes: { key: codeKey }, rateLimits, frontendUrl: config.frontendUrl, log });
  const guestRetention =
    config.guestRetentionDays > 0 ? new GuestRetention({ store, tokens, agents: { provisioner }, bots }, config.guestRetentionDays, log) : undefined;
  guestRetention?.start();
  const webhookAttempts = new Counter({
    name: 'webhook_attempts_total',
    help: 'Webhook delivery attempts, by outcome (delivered, failed: an error answer or none)',
    labelNames: ['outcome'],
    registers: [metrics.registry],
  });
  const webhookLag = new Histogram({
    name: 'webhook_delivery_lag_seconds',
    help: 'From an event to the answer of its successful delivery',
    buckets: [0.1, 0.25, 0.5, 1, 2, 5, 30, 300, 3600, 86_400],
    registers: [metrics.registry],
  });
  const webhookWorker = new WebhookWorker(store.sql, box, log, {
    pollMs: config.webhooks.pollMs,
    timeoutMs: config.webhooks.timeoutMs,
    allowPrivate: config.webhooks.allowPrivate,
    retryDelaysMs: config.webhooks.retryDelaysMs,
    onAttempt: (result, eventAt) => {
      webhookAttempts.inc({ outcome: result.ok ? 'delivered' : 'failed' });
      if (result.ok) webhookLag.observe((Date.now() - eventAt.getTime()) / 1000);
    },
  });
  webhookWorker.start();
  if (config.webhooks.allowPrivate) log.warn('WEBHOOK_ALLOW_PRIVATE=1: webhook endpoints may be on loopback and private addresses (unsafe outside tests)');
  const shutdown = new AbortController();
  return {
    config,
    log,
    store,
    tokens,
    shutdown: shutdown.signal,
    beginShutdown: () => shutdown.abort(),
    rateLimits,
    agents: { registry, provisioner },
    bots,
    metrics,
    authMetrics,
    adminAccess: new AdminAccess(store.db, tokens, metrics.registry),
    agentMetrics,
    streamSlots: streamSlots(config.agentStreamsPerUser),
    requestSlots: requestSlots(config.agentRequestsPerUser),
    localAgentsScrape,
    modelBudget,
    mail,
    email,
    oauth: new OAuthProviders(config.oauth, config.baseUrl, log),
    captcha: config.captcha ? new Captcha(config.captcha, log) : undefined,
    walletRpc: config.rpcUrl ? new JsonRpcClient(config.rpcUrl) : undefined,
    guestRetention,
    webhooks: { worker: webhookWorker, box, allowPrivate: config.webhooks.allowPrivate },
    async stopAgents() {
      await wakes?.close();
      await provisioner.close();
    },
    async close() {
      await wakes?.close();
      clearInterval(pruning);
      await guestRetention?.stop();
      await webhookWorker.close();
      await provisioner.close();
      await tokens.close();
      await mail.close();
      await rateLimits.close();
      await store.close();
    },
  };
}

/** Loaded only when configured: the Kubernetes client is large, and a local start stays fast without it. */
async function startKubernetesProvisioner(registry: AgentRegistry, log: Logger, options: KubernetesProvisionerOptions): Promise<KubernetesProvisioner> {
  const { KubernetesProvisioner } = await import('./agents/provisioners/kubernetes/provisioner.js');
  const provisioner = new KubernetesProvisioner(registry, log, options);
  await provisioner.start();
  return provisioner;
}

const stringsOf = (env: NodeJS.ProcessEnv): Record<string, string> =>
  Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
