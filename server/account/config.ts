import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { httpUrl, logLevel, optionalString, parseConfig, port } from '../common/config.js';
import { parseModelSpec } from '../agent/chat/model-spec.js';
import { oauthConfig, oauthEnv } from './auth/oauth/config.js';
import { captchaConfig, captchaEnv, captchaProblems } from './captcha/config.js';

const count = (fallback: number, min: number, max: number) =>
  z.preprocess((v) => (v === '' || v === undefined ? fallback : v), z.coerce.number().int().min(min).max(max));

const intSetting = (fallback: number, { min, max }: { min: number; max: number }) =>
  z.preprocess((v) => (v === '' || v === undefined ? fallback : v), z.coerce.number().int().min(min).max(max));

/**
 * AGENT_MAX_RUNNING's default: what this host's memory holds at about 100 MB per idle agent,
 * after 1 GB for the service itself and the system (at least one agent).
 */
export const defaultMaxRunningAgents = (totalBytes = os.totalmem()): number => Math.max(1, Math.floor((totalBytes - 1024 ** 3) / (100 * 1024 ** 2)));

const schema = z
  .object({
    PORT: port(3000),
    HOST: z.string().min(1).default('127.0.0.1'),
    DATA_DIR: z.string().min(1).default('./data'),
    DATABASE_URL: optionalString.pipe(z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional()),
    BASE_URL: optionalString.pipe(httpUrl.optional()),
    FRONTEND_URL: optionalString.pipe(httpUrl.optional()),
    REDIS_URL: optionalString.pipe(z.string().regex(/^rediss?:\/\//, 'must be a redis:// URL').optional()),
    TRUST_PROXY: optionalString,
    METRICS_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
    SIGNING_KEYS_FILE: optionalString,
    AGENT_PROVISIONER: z.enum(['local', 'static']).default('local'),
    AGENT_IDLE_TIMEOUT: z.preprocess((v) => (v === '' || v === undefined ? 1800 : v), z.coerce.number().int().min(0)),
    // Seconds between the wake scheduler's rounds (agents/wake-scheduler.ts); fractions for tests.
    AGENT_WAKE_POLL: z.preprocess((v) => (v === '' || v === undefined ? 15 : v), z.coerce.number().min(0.05).max(3600)),
    AGENT_MAX_RUNNING: intSetting(defaultMaxRunningAgents(), { min: 1, max: 1_000_000 }),
    // Seconds a stopping agent (idle, eviction, shutdown) gets to finish its runs; fractions for tests.
    AGENT_STOP_GRACE: z.preprocess((v) => (v === '' || v === undefined ? 10 : v), z.coerce.number().min(0).max(3600)),
    // Local agents' sandbox (agents/sandbox.ts, agents/launcher.ts) and egress (agents/egress-gateway.ts).
    AGENT_SANDBOX: z.preprocess((v) => (v === '' || v === undefined ? 'on' : v), z.enum(['on', 'off'])),
    AGENT_SANDBOX_BWRAP: z.string().min(1).default('bwrap'),
    AGENT_MEMORY_MB: intSetting(1024, { min: 128, max: 1_048_576 }),
    AGENT_MAX_PROCESSES: intSetting(256, { min: 16, max: 100_000 }),
    AGENT_CPU_PERCENT: intSetting(100, { min: 10, max: 10_000 }),
    AGENT_MAX_OPEN_FILES: intSetting(1024, { min: 64, max: 1_048_576 }),
    AGENT_TMP_MB: intSetting(64, { min: 1, max: 65_536 }),
    AGENT_EGRESS_ALLOW: optionalString,
    AGENT_WORKSPACE_QUOTA_MB: intSetting(1024, { min: 1, max: 1_048_576 }),
    AGENT_WORKSPACE_QUOTA_MB_GUEST: intSetting(100, { min: 1, max: 1_048_576 }),
    // What the egress gateway forwards model and Telegram calls to, and the keys it adds.
    MODEL: optionalString,
    MODEL_API_KEY: optionalString,
    OPENAI_API_KEY: optionalString,
    OPENAI_BASE_URL: optionalString.pipe(httpUrl.optional()),
    ANTHROPIC_API_KEY: optionalString,
    ANTHROPIC_BASE_URL: optionalString.pipe(httpUrl.optional()),
    TELEGRAM_API_ROOT: optionalString.pipe(httpUrl.optional()),
    // The account's public base URL for users' bot webhooks (https in production); unset: agents long-poll.
    TELEGRAM_WEBHOOK_BASE: optionalString.pipe(httpUrl.optional()),
    AGENT_SECRETS_KEY: optionalString.pipe(
      z.string().refine((v) => Buffer.from(v, 'base64').length === 32, 'must be 32 bytes, base64-encoded').optional(),
    ),
    WALLET_CHAIN_ID: z.preprocess((v) => (v === '' || v === undefined ? 1 : v), z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER)),
    RPC_URL: optionalString.pipe(httpUrl.optional()),
    SMTP_URL: optionalString.pipe(
      z
        .url({ protocol: /^smtps?$/, error: 'must be an smtp:// or smtps:// URL' })
        .optional(),
    ),
    MAIL_FROM: optionalString.pipe(
      z
        .string()
        .max(320)
        .regex(/^(?:[^<>\r\n]*<[^\s<>@]+@[^\s<>@]+>|[^\s<>@]+@[^\s<>@]+)$/, 'must be an address, or "Name <address>"')
        .optional(),
    ),
    DEV_OUTBOX: optionalString.pipe(z.enum(['0', '1']).optional()),
    NODE_ENV: optionalString,
    RATE_LIMIT_MULTIPLIER: z.preprocess((v) => (v === '' || v === undefined ? 1 : v), z.coerce.number().int().min(1).max(100_000)),
    IPV6_SUBNET: count(64, 32, 128),
    GUEST_SIGNUPS_PER_DAY: count(30, 1, 1_000_000),
    GUEST_SIGNUPS_PER_HOUR: count(2000, 1, 100_000_000),
    LOG_LEVEL: logLevel,
    ...oauthEnv,
    ...captchaEnv,
  })
  .superRefine((env, ctx) => {
    // The outbox page shows every sign-in link and code: never where real people sign in.
    if (env.DEV_OUTBOX === '1' && env.NODE_ENV === 'production') ctx.addIssue({ code: 'custom', path: ['DEV_OUTBOX'], message: 'is not allowed when NODE_ENV=production' });
    if (env.MODEL) {
      try {
        parseModelSpec(env.MODEL);
      } catch (error) {
        ctx.addIssue({ code: 'custom', path: ['MODEL'], message: (error as Error).message });
      }
    }
    if (env.DEV_OUTBOX === '1' && env.SMTP_URL) ctx.addIssue({ code: 'custom', path: ['DEV_OUTBOX'], message: 'lists the local outbox, which is not used when SMTP_URL is set' });
    for (const [name, message] of captchaProblems(env)) ctx.addIssue({ code: 'custom', path: [name], message });
  })
  .transform((env) => {
    const baseUrl = (env.BASE_URL ?? `http://${env.HOST === '0.0.0.0' ? '127.0.0.1' : env.HOST}:${env.PORT}`).replace(/\/$/, '');
    return {
      port: env.PORT,
      host: env.HOST,
      dataDir: path.resolve(env.DATA_DIR),
      signingKeysFile: path.resolve(env.SIGNING_KEYS_FILE ?? path.join(env.DATA_DIR, 'signing-keys.json')),
      databaseUrl: env.DATABASE_URL,
      baseUrl,
      frontendUrl: (env.FRONTEND_URL ?? baseUrl).replace(/\/$/, ''),
      redisUrl: env.REDIS_URL,
      rateLimitMultiplier: env.RATE_LIMIT_MULTIPLIER,
      /** Rate limits count an IPv6 client on this prefix length (ratelimit/client-key.ts). */
      ipv6Subnet: env.IPV6_SUBNET,
      /** New guests per client per day and service-wide per hour (ratelimit/policy.ts). */
      guestSignupsPerDay: env.GUEST_SIGNUPS_PER_DAY,
      guestSignupsPerHour: env.GUEST_SIGNUPS_PER_HOUR,
      /** Unset: no CAPTCHA (captcha/). */
      captcha: captchaConfig(env),
      agentProvisioner: env.AGENT_PROVISIONER,
      agentIdleTimeoutSeconds: env.AGENT_IDLE_TIMEOUT,
      agentStopGraceMs: env.AGENT_STOP_GRACE * 1000,
      /** Local agents running at once; at the cap the least recently used idle one is stopped. */
      agentMaxRunning: env.AGENT_MAX_RUNNING,
      agentWakePollMs: env.AGENT_WAKE_POLL * 1000,
      agentSecretsKey: env.AGENT_SECRETS_KEY,
      agentLauncher: {
        sandbox: env.AGENT_SANDBOX,
        bwrap: env.AGENT_SANDBOX_BWRAP,
        memoryBytes: env.AGENT_MEMORY_MB * 1024 * 1024,
        maxProcesses: env.AGENT_MAX_PROCESSES,
        cpuPercent: env.AGENT_CPU_PERCENT,
        maxOpenFiles: env.AGENT_MAX_OPEN_FILES,
        tmpBytes: env.AGENT_TMP_MB * 1024 * 1024,
      },
      /** Disk quota of a workspace, by who owns it (a guest who signs up gets the larger one at the agent's next start). */
      workspaceQuotaMb: { account: env.AGENT_WORKSPACE_QUOTA_MB, guest: env.AGENT_WORKSPACE_QUOTA_MB_GUEST },
      egress: {
        model: env.MODEL,
        modelApiKey: env.MODEL_API_KEY,
        openaiApiKey: env.OPENAI_API_KEY,
        openaiBaseUrl: env.OPENAI_BASE_URL,
        anthropicApiKey: env.ANTHROPIC_API_KEY,
        anthropicBaseUrl: env.ANTHROPIC_BASE_URL,
        telegramApiRoot: env.TELEGRAM_API_ROOT ?? 'https://api.telegram.org',
        allow: (env.AGENT_EGRESS_ALLOW ?? '').split(',').map((entry) => entry.trim()).filter(Boolean),
      },
      /** Users' bots (messenger/bots.ts): set → webhook mode at `{base}/api/v1/telegram/{id}/webhook`. */
      telegramWebhookBase: env.TELEGRAM_WEBHOOK_BASE?.replace(/\/+$/, ''),
      /** SIWE (auth/wallet): the EIP-155 chain id in challenges; the JSON-RPC endpoint for smart-wallet signatures. */
      walletChainId: env.WALLET_CHAIN_ID,
      rpcUrl: env.RPC_URL,
      /** Unset → mails are written to `outboxDir` instead of being sent. */
      smtpUrl: env.SMTP_URL,
      mailFrom: env.MAIL_FROM ?? `Agent Accounts <no-reply@${new URL(baseUrl).hostname}>`,
      outboxDir: path.resolve(env.DATA_DIR, 'outbox'),
      /** GET /dev/outbox lists the local outbox (development only). */
      devOutbox: env.DEV_OUTBOX === '1',
      trustProxy: env.TRUST_PROXY ? env.TRUST_PROXY.split(',').map((s) => s.trim()).filter(Boolean) : [],
      /** Set: GET /metrics needs it as a bearer token; unset: loopback callers only. */
    metricsToken: env.METRICS_TOKEN,
    logLevel: env.LOG_LEVEL,
      oauth: oauthConfig(env),
    };
  });

export type AccountConfig = z.output<typeof schema>;

export const loadAccountConfig = (env: NodeJS.ProcessEnv): AccountConfig => parseConfig(schema, env);
