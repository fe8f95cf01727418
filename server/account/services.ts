/**
 * Everything the account procedures work with, built once at start and closed at stop.
 * Domain modules take what they need from here as explicit arguments.
 */
import path from 'node:path';
import type { Logger } from '../common/log.js';
import { EgressGateway, agentModelEnvironment, egressRoutes } from './agents/egress-gateway.js';
import { AgentLauncher } from './agents/launcher.js';
import { LocalProvisioner, StaticProvisioner, agentEnvironment, type AgentProvisioner } from './agents/provisioner.js';
import { AgentRegistry } from './agents/registry.js';
import { WakeScheduler } from './agents/wake-scheduler.js';
import { MessengerBots } from './messenger/bots.js';
import { loadSecretBox } from './agents/secrets.js';
import { loadEmailCodeKey } from './auth/email/codes.js';
import { MailQueue, outboxTransport, smtpTransport } from './auth/email/mail.js';
import { EmailSignIn } from './auth/email/service.js';
import type { AccountConfig } from './config.js';
import { OAuthProviders } from './auth/oauth/providers.js';
import { RateLimits } from './ratelimit/limits.js';
import { Captcha } from './captcha/siteverify.js';
import { openAccountStore, type AccountStore } from './store.js';
import { loadSigningKeys } from './tokens/keys.js';
import { TokenService } from './tokens/service.js';

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
  /** Stops the wake scheduler, then every agent, gracefully (safe to call again from close). */
  stopAgents(): Promise<void>;
  close(): Promise<void>;
}

export async function createAccountServices(config: AccountConfig, log: Logger): Promise<AccountServices> {
  const store = await openAccountStore(config);
  log.info({ kind: store.kind, applied: store.appliedMigrations }, 'account store open');
  const keys = await loadSigningKeys(config.signingKeysFile);
  const tokens = new TokenService(store, { keys, issuer: config.baseUrl, audience: config.baseUrl }, log);
  const rateLimits = new RateLimits({
    redisUrl: config.redisUrl,
    multiplier: config.rateLimitMultiplier,
    ipv6Subnet: config.ipv6Subnet,
    limits: { 'guest.signups.client.daily': config.guestSignupsPerDay, 'guest.signups.hourly': config.guestSignupsPerHour },
  });
  const box = await loadSecretBox(config.agentSecretsKey, config.dataDir);
  const registry = new AgentRegistry(store.db, box);
  // Bound below: the bots need the provisioner, the provisioner asks them for an agent's bot settings.
  let bots: MessengerBots | undefined;
  const provisioner =
    config.agentProvisioner === 'static'
      ? new StaticProvisioner(registry)
      : new LocalProvisioner(registry, log, {
          dataDir: config.dataDir,
          idleTimeoutSeconds: config.agentIdleTimeoutSeconds,
          stopGraceMs: config.agentStopGraceMs,
          maxRunning: config.agentMaxRunning,
          agentEnv: { ...agentEnvironment(process.env), ...agentModelEnvironment(config.egress) },
          launcher: new AgentLauncher(config.agentLauncher, new EgressGateway(egressRoutes(config.egress), log), log),
          userEnv: async (userId) => (bots ? bots.agentEnv(userId) : {}),
          workspaceQuotaMb: async (userId) => {
            const user = await store.db.user.findUnique({ where: { id: userId }, select: { isGuest: true } });
            return user?.isGuest ? config.workspaceQuotaMb.guest : config.workspaceQuotaMb.account;
          },
        });
  if (provisioner instanceof LocalProvisioner) {
    bots = new MessengerBots(store.db, box, provisioner, log, { telegramApiRoot: config.egress.telegramApiRoot.replace(/\/+$/, ''), webhookBase: config.telegramWebhookBase });
  }
  // Sleeping local agents are started when their next heartbeat is due.
  const wakes = provisioner instanceof LocalProvisioner ? new WakeScheduler(store.db, provisioner, log, { pollMs: config.agentWakePollMs }) : undefined;
  wakes?.start();
  const codeKey = await loadEmailCodeKey(path.join(config.dataDir, 'email-code-key'));
  const mail = new MailQueue(config.smtpUrl ? smtpTransport(config.smtpUrl, config.mailFrom) : outboxTransport(config.outboxDir, config.mailFrom, log), log);
  if (!config.smtpUrl) log.info({ outbox: config.outboxDir }, 'no SMTP_URL: mail is written to the local outbox');
  const email = new EmailSignIn({ db: store.db, tokens, mail, codes: { key: codeKey }, frontendUrl: config.frontendUrl, log });
  return {
    config,
    log,
    store,
    tokens,
    rateLimits,
    agents: { registry, provisioner },
    bots,
    mail,
    email,
    oauth: new OAuthProviders(config.oauth, config.baseUrl, log),
    captcha: config.captcha ? new Captcha(config.captcha, log) : undefined,
    async stopAgents() {
      await wakes?.close();
      await provisioner.close();
    },
    async close() {
      await wakes?.close();
      await provisioner.close();
      await mail.close();
      await rateLimits.close();
      await store.close();
    },
  };
}
