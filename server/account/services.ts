/**
 * Everything the account procedures work with, built once at start and closed at stop; the
 * agents' part is assembled beside them (agents/assemble.ts). Domain modules take what they need
 * from here as explicit arguments.
 */
import path from 'node:path';
import { Counter, Histogram } from 'prom-client';
import type { Logger } from '../common/log.js';
import { createMetrics, type ServiceMetrics } from '../common/metrics.js';
import { createFilesPrivately, privateDir } from '../common/private-files.js';
import { AdminAccess } from './admin/access.js';
import { WebhookWorker } from './admin/webhooks/worker.js';
import type { LocalAgentsScrape } from './agents/agent-metrics.js';
import { assembleAgents } from './agents/assemble.js';
import type { ModelBudget } from './agents/egress/model-usage.js';
import type { AgentMetrics } from './agents/metrics.js';
import type { AgentProvisioner } from './agents/provisioners/provisioner.js';
import type { UserSlots } from './agents/proxy/user-slots.js';
import type { AgentRegistry } from './agents/registry.js';
import type { SecretBox } from './agents/secrets.js';
import { AuthMetrics } from './auth-metrics.js';
import { loadEmailCodeKey } from './auth/email/codes.js';
import { MailQueue, outboxTransport, smtpTransport } from './auth/email/mail.js';
import { EmailSignIn } from './auth/email/service.js';
import { SecondFactors } from './auth/mfa/factors.js';
import { OAuthProviders } from './auth/oauth/providers.js';
import { JsonRpcClient, type WalletRpc } from './auth/wallet/rpc.js';
import { Captcha } from './captcha/siteverify.js';
import type { AccountConfig } from './config.js';
import { pruneActivity } from './events/activity.js';
import { MessengerBots } from './messenger/bots.js';
import { Connectors } from './connectors/connectors.js';
import { RateLimits } from './ratelimit/limits.js';
import { openAccountStore, type AccountStore } from './store.js';
import { loadSigningKeys } from './tokens/keys.js';
import { TokenService } from './tokens/service.js';
import { timezoneOf } from './users/account.js';
import { onGuestTerms } from './users/identities.js';
import { GuestRetention } from './users/retention.js';
import { promoteAdminEmails } from './users/roles.js';

export interface AccountServices {
  config: AccountConfig;
  log: Logger;
  store: AccountStore;
  tokens: TokenService;
  rateLimits: RateLimits;
  agents: { registry: AgentRegistry; provisioner: AgentProvisioner };
  /** Users' own Telegram bots (local agents only). */
  bots: MessengerBots | undefined;
  /** Users' own MCP servers (connectors/); their tools reach agents through the egress gateway. */
  connectors: Connectors;
  /** Outgoing mail: SMTP_URL, or the local outbox. */
  mail: MailQueue;
  email: EmailSignIn;
  /** Second factors: enrolment and the second step of sign-ins (auth/mfa/). */
  mfa: SecondFactors;
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
  // Guest terms (budgets, quota) for every account not `full` (users/identities.ts); an unknown user gets them too.
  const budgetUser = async (userId: string) => {
    const user = await store.db.user.findUnique({ where: { id: userId }, select: { tier: true, modelDailyTokens: true, guestMessagesPerDay: true } });
    return { guest: onGuestTerms(user?.tier ?? 'guest'), dailyTokens: user?.modelDailyTokens, guestMessagesPerDay: user?.guestMessagesPerDay };
  };
  // Bound below: the bots need the agents, the agents ask them for an agent's bot settings.
  let bots: MessengerBots | undefined;
  let connectors: Connectors | undefined;
  const agents = await assembleAgents({
    config,
    log,
    store,
    metrics,
    budgetUser,
    userEnv: async (userId) => (bots ? bots.agentEnv(userId) : {}),
    connectors: {
      tools: async (userId) => (connectors ? connectors.agentTools(userId) : []),
      call: async (userId, call, signal) =>
        connectors
          ? connectors.call(userId, call.name, call.arguments, signal)
          : { content: [{ type: 'text', text: 'Connectors are not ready' }], is_error: true },
    },
    userZone: (userId) => timezoneOf(store.db, userId),
  });
  const { registry, provisioner, sleeping, box } = agents;
  connectors = new Connectors(store.db, box, log.child({ area: 'connectors' }), {
    ...config.connectors,
    baseUrl: config.baseUrl,
    frontendUrl: config.frontendUrl,
  });
  if (config.connectors.allowPrivate)
    log.warn('CONNECTORS_ALLOW_PRIVATE=1: connectors may be on loopback and private addresses (unsafe outside development and tests)');
  // After a sign-in's answer, a returning user's sleeping agent starts, a new one's comes from the warm pool: ready before the first message.
  if (sleeping) {
    tokens.signedIn = ({ userId, created }) => void sleeping.warmUp(userId, { created });
    bots = new MessengerBots(store.db, box, sleeping, log, {
      telegramApiRoot: config.egress.telegramApiRoot.replace(/\/+$/, ''),
      webhookBase: config.telegramWebhookBase,
    });
  }
  agents.startWaking();
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
    connectors,
    metrics,
    authMetrics,
    adminAccess: new AdminAccess(store.db, tokens, metrics.registry, config.adminRequire2fa),
    agentMetrics: agents.agentMetrics,
    streamSlots: agents.streamSlots,
    requestSlots: agents.requestSlots,
    localAgentsScrape: agents.localAgentsScrape,
    modelBudget: agents.modelBudget,
    mail,
    email,
    mfa: new SecondFactors({ db: store.db, box, rateLimits, tokens, issuer: config.passkey.rpName }),
    oauth: new OAuthProviders(config.oauth, config.baseUrl, log),
    captcha: config.captcha ? new Captcha(config.captcha, log) : undefined,
    walletRpc: config.rpcUrl ? new JsonRpcClient(config.rpcUrl) : undefined,
    guestRetention,
    webhooks: { worker: webhookWorker, box, allowPrivate: config.webhooks.allowPrivate },
    async stopAgents() {
      await agents.stopWaking();
      await provisioner.close();
    },
    async close() {
      await agents.stopWaking();
      clearInterval(pruning);
      await guestRetention?.stop();
      await webhookWorker.close();
      await provisioner.close();
      await connectors?.close();
      await tokens.close();
      await mail.close();
      await rateLimits.close();
      await store.close();
    },
  };
}
