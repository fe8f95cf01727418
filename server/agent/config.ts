import { createHash } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { logLevel, optionalString, parseConfig, port } from '../common/config.js';
import { parseModelSpec } from './chat/model-spec.js';

export const AGENT_VERSION = '0.1.0';

/** A duration in seconds (fractions allowed, so tests can inject short intervals). */
const seconds = (fallback: number, { max }: { max: number }) =>
  z.preprocess((v) => (v === '' || v === undefined ? fallback : v), z.coerce.number().positive().max(max));

const schema = z
  .object({
    AGENT_PORT: port(3100),
    HOST: z.string().min(1).default('127.0.0.1'),
    // Set by the account service for a local (sandboxed) agent: serve on this Unix socket, no TCP
    // port; send outgoing HTTP through the egress gateway's socket (net/egress.ts).
    AGENT_SOCKET: optionalString,
    AGENT_EGRESS_SOCKET: optionalString,
    AGENT_SECRET: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
    AGENT_SECRET_SHA256: optionalString.pipe(z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits').optional()),
    AGENT_NAME: z.string().min(1).max(100).default('agent'),
    AGENT_WORKSPACE: z.string().min(1).default('./data/workspace'),
    MODEL: optionalString,
    // Fractions allowed, so tests can inject short intervals.
    HEARTBEAT_INTERVAL: z.preprocess((v) => (v === '' || v === undefined ? 1800 : v), z.coerce.number().min(0).max(86_400 * 7)),
    LOG_LEVEL: logLevel,
    METRICS_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
    // Chat runtime (server/agent/chat/).
    MODEL_API_KEY: optionalString,
    AGENT_EXEC: z.preprocess((v) => (v === '' || v === undefined ? 'on' : v), z.enum(['on', 'off'])),
    AGENT_EXEC_TIMEOUT: seconds(60, { max: 3600 }),
    // Set by the account service for a sandboxed agent: the bwrap command line exec commands run under.
    AGENT_EXEC_SANDBOX: optionalString.pipe(
      z
        .string()
        .transform((v, ctx) => {
          try {
            return z.array(z.string().min(1)).min(1).parse(JSON.parse(v));
          } catch {
            ctx.addIssue({ code: 'custom', message: 'must be a JSON array of strings' });
            return z.NEVER;
          }
        })
        .optional(),
    ),
    AGENT_WORKSPACE_QUOTA_MB: z.preprocess((v) => (v === '' || v === undefined ? 1024 : v), z.coerce.number().int().min(1).max(1_048_576)),
    AGENT_RUN_TIMEOUT: seconds(600, { max: 86_400 }),
    AGENT_MAX_STEPS: z.preprocess((v) => (v === '' || v === undefined ? 20 : v), z.coerce.number().int().min(1).max(200)),
    AGENT_MODEL_RETRIES: z.preprocess((v) => (v === '' || v === undefined ? 2 : v), z.coerce.number().int().min(0).max(10)),
    AGENT_KEEPALIVE_INTERVAL: seconds(15, { max: 300 }),
    AGENT_STREAM_GRACE: seconds(30, { max: 3600 }),
    AGENT_HISTORY_CONTEXT: z.preprocess((v) => (v === '' || v === undefined ? 40 : v), z.coerce.number().int().min(0).max(1000)),
    // Subagents (server/agent/subagents/) and heartbeat (server/agent/heartbeat/).
    SUBAGENT_TIMEOUT: seconds(600, { max: 86_400 }),
    SUBAGENT_MAX_RUNNING: z.preprocess((v) => (v === '' || v === undefined ? 8 : v), z.coerce.number().int().min(1).max(100)),
    SUBAGENT_RETENTION: seconds(3600, { max: 86_400 * 7 }),
    SUBAGENT_PURGE_INTERVAL: seconds(60, { max: 86_400 }),
    // Set by the account service: the wake time it kept while the agent slept (a past one runs at once).
    HEARTBEAT_NEXT_AT: optionalString.pipe(z.iso.datetime({ offset: true }).optional()),
    // How long a stop we are asked for (SIGTERM) lets runs finish before it interrupts them.
    AGENT_STOP_GRACE: seconds(10, { max: 3600 }),
    HEARTBEAT_WAIT: z.preprocess((v) => (v === '' || v === undefined ? 60 : v), z.coerce.number().min(0).max(3600)),
    // Telegram messenger (server/agent/messenger/).
    TELEGRAM_BOT_TOKEN: optionalString.pipe(z.string().regex(/^\d+:[\w-]+$/, 'must look like 123456:ABC-DEF… (from @BotFather)').optional()),
    TELEGRAM_OWNER_ID: optionalString.pipe(z.string().regex(/^\d{1,20}$/, 'must be a numeric Telegram user id').optional()),
    TELEGRAM_API_ROOT: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
    TELEGRAM_GROUPS: z.preprocess((v) => (v === '' || v === undefined ? 'off' : v), z.enum(['on', 'off'])),
    TELEGRAM_POLL_TIMEOUT: z.preprocess((v) => (v === '' || v === undefined ? 30 : v), z.coerce.number().int().min(0).max(50)),
    TELEGRAM_RETRY_BASE: seconds(1, { max: 60 }),
    TELEGRAM_RETRY_MAX: seconds(60, { max: 3600 }),
    TELEGRAM_WEBHOOK_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
    TELEGRAM_WEBHOOK_SECRET: optionalString.pipe(z.string().regex(/^[\w-]{16,256}$/, 'must be 16..256 of A-Z a-z 0-9 _ -').optional()),
  })
  .superRefine((env, ctx) => {
    if (env.MODEL) {
      try {
        parseModelSpec(env.MODEL);
      } catch (error) {
        ctx.addIssue({ code: 'custom', path: ['MODEL'], message: (error as Error).message });
      }
    }
    if (env.TELEGRAM_WEBHOOK_URL && !env.TELEGRAM_WEBHOOK_SECRET) {
      ctx.addIssue({ code: 'custom', path: ['TELEGRAM_WEBHOOK_SECRET'], message: 'is required with TELEGRAM_WEBHOOK_URL' });
    }
    if (!env.AGENT_SECRET && !env.AGENT_SECRET_SHA256) {
      ctx.addIssue({ code: 'custom', path: ['AGENT_SECRET'], message: 'AGENT_SECRET or AGENT_SECRET_SHA256 is required' });
    }
  })
  .transform((env) => ({
    port: env.AGENT_PORT,
    host: env.HOST,
    socketPath: env.AGENT_SOCKET,
    egressSocket: env.AGENT_EGRESS_SOCKET,
    // The plain secret is hashed here and never kept (spec: the agent keeps a SHA-256 hash).
    secretSha256: Buffer.from(
      env.AGENT_SECRET_SHA256 ?? createHash('sha256').update(env.AGENT_SECRET ?? '').digest('hex'),
      'hex',
    ),
    name: env.AGENT_NAME,
    workspace: path.resolve(env.AGENT_WORKSPACE),
    workspaceQuotaBytes: env.AGENT_WORKSPACE_QUOTA_MB * 1024 * 1024,
    model: env.MODEL,
    chat: {
      model: env.MODEL ? parseModelSpec(env.MODEL) : undefined,
      /** Key for `openai-compatible:` models (OpenAI and Anthropic read OPENAI_API_KEY / ANTHROPIC_API_KEY). */
      modelApiKey: env.MODEL_API_KEY,
      modelRetries: env.AGENT_MODEL_RETRIES,
      execEnabled: env.AGENT_EXEC === 'on',
      execTimeoutMs: env.AGENT_EXEC_TIMEOUT * 1000,
      execSandbox: env.AGENT_EXEC_SANDBOX,
      runTimeoutMs: env.AGENT_RUN_TIMEOUT * 1000,
      maxSteps: env.AGENT_MAX_STEPS,
      keepaliveMs: env.AGENT_KEEPALIVE_INTERVAL * 1000,
      streamGraceMs: env.AGENT_STREAM_GRACE * 1000,
      historyContext: env.AGENT_HISTORY_CONTEXT,
    },
    telegram: {
      /** Unset: no bot; the contact endpoints still answer. */
      token: env.TELEGRAM_BOT_TOKEN,
      ownerId: env.TELEGRAM_OWNER_ID,
      apiRoot: env.TELEGRAM_API_ROOT?.replace(/\/+$/, '') ?? 'https://api.telegram.org',
      groups: env.TELEGRAM_GROUPS === 'on',
      pollTimeoutSeconds: env.TELEGRAM_POLL_TIMEOUT,
      retryBaseMs: env.TELEGRAM_RETRY_BASE * 1000,
      retryMaxMs: Math.max(env.TELEGRAM_RETRY_MAX, env.TELEGRAM_RETRY_BASE) * 1000,
      /** Set: Telegram pushes updates to `POST /telegram/webhook` instead of long polling. */
      // A secret without a URL: someone else (the account service) set the webhook and relays updates.
      webhook: env.TELEGRAM_WEBHOOK_SECRET ? { url: env.TELEGRAM_WEBHOOK_URL, secret: env.TELEGRAM_WEBHOOK_SECRET } : undefined,
    },
    /** Seconds between heartbeats; 0 disables them. */
    heartbeatIntervalSeconds: env.HEARTBEAT_INTERVAL,
    /** Seconds a requested stop waits for runs before it interrupts them (each ends with an `error`). */
    stopGraceMs: env.AGENT_STOP_GRACE * 1000,
    heartbeat: {
      /** The first tick (HEARTBEAT_NEXT_AT); unset: one interval after start. */
      nextAt: env.HEARTBEAT_NEXT_AT ? new Date(env.HEARTBEAT_NEXT_AT) : undefined,
      /** How long a heartbeat waits for the user's active run in its chat before it skips. */
      waitMs: env.HEARTBEAT_WAIT * 1000,
    },
    subagents: {
      /** Default (and upper bound of the tool's `timeout_seconds`). */
      timeoutMs: env.SUBAGENT_TIMEOUT * 1000,
      maxRunning: env.SUBAGENT_MAX_RUNNING,
      /** Finished runs are kept this long after they end, then purged (spec: 1 hour). */
      retentionMs: env.SUBAGENT_RETENTION * 1000,
      purgeIntervalMs: env.SUBAGENT_PURGE_INTERVAL * 1000,
    },
    /** Set: GET /metrics needs it as a bearer token; unset: loopback callers only. */
    metricsToken: env.METRICS_TOKEN,
    logLevel: env.LOG_LEVEL,
  }));

export type AgentConfig = z.output<typeof schema>;

export const loadAgentConfig = (env: NodeJS.ProcessEnv): AgentConfig => parseConfig(schema, env);
