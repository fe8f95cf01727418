import { createHash } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { logLevel, logPretty, optionalString, otlpEndpoint, parseConfig, port, requestBodyTimeout, uploadIdleTimeout } from '../common/config.js';
import { parseModelSpec } from '@contracts/agent/model-spec.js';
import { WEB_TOOLS } from '@contracts/agent/web.js';
import type { EgressGatewayAddress } from './net/egress.js';

export const AGENT_VERSION = '0.1.0';

/** The tools an owner may give Telegram contacts (TELEGRAM_CONTACT_TOOLS); never spawn_subagent. */
const CONTACT_GRANTABLE_TOOLS = ['list_files', 'read_file', 'write_file', 'send_file', 'exec'] as const;

/** A duration in seconds (fractions allowed, so tests can inject short intervals). */
const seconds = (fallback: number, { max }: { max: number }) =>
  z.preprocess((v) => (v === '' || v === undefined ? fallback : v), z.coerce.number().positive().max(max));

/**
 * The agent service's environment; each variable's meaning is on its schema (see
 * server/common/config.ts), from which `npm run docs` writes docs/configuration.md.
 */
export const agentEnv = z.object({
  AGENT_PORT: port(3100).describe('listen port'),
  HOST: z.string().min(1).default('127.0.0.1').describe('listen address'),
  // Set by the account service for a local (sandboxed) agent: serve on this Unix socket, no TCP
  // port; send outgoing HTTP through the egress gateway's socket (net/egress.ts).
  AGENT_SOCKET: optionalString.meta({ description: 'serve on this Unix socket instead of a TCP port', internal: true, values: 'a socket path' }),
  AGENT_EGRESS_SOCKET: optionalString.meta({
    description: "send outgoing HTTP through the egress gateway's Unix socket",
    internal: true,
    values: 'a socket path',
  }),
  AGENT_EGRESS_URL: optionalString.pipe(z.url({ protocol: /^http$/ }).optional()).meta({
    description: "the egress gateway's TCP address (an agent in a Kubernetes pod): outgoing HTTP goes there, with `AGENT_EGRESS_TOKEN`",
    internal: true,
    values: 'an http URL',
  }),
  AGENT_EGRESS_TOKEN: optionalString.meta({
    description: "this agent's credential at the egress gateway's TCP address (`AGENT_EGRESS_URL`); set by the Kubernetes provisioner",
    internal: true,
    values: 'a token',
  }),
  AGENT_SECRET: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()).meta({
    description: 'bearer secret; hashed at start, never kept',
    default: '— (this or `AGENT_SECRET_SHA256` is **required**)',
    values: 'at least 16 characters',
  }),
  AGENT_SECRET_SHA256: optionalString
    .pipe(
      z
        .string()
        .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits')
        .optional(),
    )
    .meta({ description: "the secret's SHA-256, instead of the secret", default: '—', values: '64 hex digits' }),
  AGENT_SECRETS_FD: optionalString.meta({
    description:
      'a file descriptor to read secret settings from (a JSON object: `AGENT_SECRET`, bot token, keys), so they never sit in the environment, which `/proc/<pid>/environ` shows; set by the local provisioner',
    default: '—',
    values: 'a descriptor number',
  }),
  AGENT_SECRETS_FILE: optionalString.meta({
    description:
      "a file to read secret settings from (the same JSON object as `AGENT_SECRETS_FD`): the Kubernetes provisioner mounts the agent's Secret there, read-only, so they never sit in the environment",
    default: '—',
    values: 'a file path',
  }),
  AGENT_NAME: z.string().min(1).max(100).default('agent').describe('name reported by `/health`'),
  AGENT_WORKSPACE: z.string().min(1).default('./data/workspace').describe("the agent's files"),
  AGENT_STATE_DIR: optionalString.meta({
    description:
      'where `agent.db` lives (chats, contacts, owner codes): outside the workspace, which `exec` commands see; an `agent.db` left at the workspace root by an older version is moved here at start',
    default: '`<AGENT_WORKSPACE>.state` (a sibling directory)',
    values: 'a directory path',
  }),
  MODEL: optionalString.meta({
    description:
      '`openai-compatible:<base_url>#<model>` (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter…), `openai:<model>` (`OPENAI_API_KEY`, `OPENAI_BASE_URL`), `anthropic:<model>` (`ANTHROPIC_API_KEY`)',
    default: 'unset → every reply says no model is configured',
    values: '`openai-compatible:<base_url>#<model>`, `openai:<model>`, `anthropic:<model>`',
  }),
  // Fractions allowed, so tests can inject short intervals.
  HEARTBEAT_INTERVAL: z
    .preprocess(
      (v) => (v === '' || v === undefined ? 1800 : v),
      z.coerce
        .number()
        .min(0)
        .max(86_400 * 7),
    )
    .describe('seconds between heartbeats (fractions allowed); `0` disables'),
  HEARTBEAT_MODEL: optionalString.meta({
    description: 'the model heartbeats run on (a cheaper one, in `MODEL` syntax); the account service passes its own setting to its agents',
    default: 'unset → `MODEL`',
    values: 'as `MODEL`',
  }),
  // Scheduled tasks (server/agent/tasks/); the account service sets the limits of its agents by account tier.
  TASK_MODEL: optionalString.meta({
    description: 'the model scheduled tasks run on (a cheaper one, in `MODEL` syntax); the account service passes its own setting to its agents',
    default: 'unset → `MODEL`',
    values: 'as `MODEL`',
  }),
  TASKS_MAX: z
    .preprocess((v) => (v === '' || v === undefined ? 50 : v), z.coerce.number().int().min(0).max(10_000))
    .describe('scheduled tasks the agent may hold (active and paused; 403 `TASK_LIMIT` past it); the account service sets it per account tier'),
  TASK_MIN_INTERVAL: seconds(300, { max: 86_400 * 7 }).describe(
    'seconds a recurring task must leave between two runs (400 `INVALID_SCHEDULE` for a closer cron); the account service sets it per account tier',
  ),
  USER_TIMEZONE: optionalString.pipe(z.string().max(64).optional()).meta({
    description:
      "the user's IANA time zone: the default zone of their tasks, and the local time the model is told when it schedules one; the account service passes the zone kept on the account (and tells a running agent when it changes)",
    default: 'unset → the last zone the account service told it, else UTC',
    values: 'an IANA zone name, e.g. `Europe/Berlin`',
  }),
  LOG_LEVEL: logLevel,
  LOG_PRETTY: logPretty,
  METRICS_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()).meta({
    description: '`GET /metrics` then needs `Authorization: Bearer <METRICS_TOKEN>` (or the agent secret, which the account service scrapes local agents with)',
    default: 'unset → `/metrics` answers loopback callers and callers with the agent secret',
  }),
  OTEL_EXPORTER_OTLP_ENDPOINT: otlpEndpoint,
  // Chat runtime (server/agent/chat/).
  MODEL_API_KEY: optionalString.describe('bearer key for an `openai-compatible:` model'),
  AGENT_EXEC: z.preprocess((v) => (v === '' || v === undefined ? 'on' : v), z.enum(['on', 'off'])).describe('`off` removes the `exec` tool'),
  // Set by the account service: which web tools its egress gateway answers for this agent (tools/web.ts).
  AGENT_WEB_TOOLS: z
    .preprocess(
      (v) =>
        String(v ?? '')
          .split(',')
          .map((name) => name.trim())
          .filter(Boolean),
      z.array(z.enum(WEB_TOOLS, { message: `each must be one of ${WEB_TOOLS.join(', ')}` })),
    )
    .meta({
      description: 'the web tools the egress gateway answers for this agent: `web_fetch`, `web_search`; offered only with a gateway',
      internal: true,
      values: 'comma-separated `fetch`, `search`',
    }),
  AGENT_EXEC_TIMEOUT: seconds(60, { max: 3600 }).describe('seconds before an `exec` command is killed (with its process group)'),
  // Set by the account service for a sandboxed agent: the bwrap command line exec commands run under.
  AGENT_EXEC_SANDBOX: optionalString
    .pipe(
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
    )
    .meta({ description: 'the bubblewrap command line each `exec` command runs under', internal: true, values: 'a JSON array of strings' }),
  // Set with AGENT_EXEC_NETWORK=allowlist: exec commands' HTTP(S) proxy, the relay to the egress gateway.
  AGENT_EXEC_PROXY: optionalString.pipe(z.url({ protocol: /^http$/ }).optional()).meta({
    description: "`exec` commands' HTTP(S) proxy, a relay to the egress gateway (with `AGENT_EXEC_NETWORK=allowlist`)",
    internal: true,
    values: 'http URL',
  }),
  // Set by the Kubernetes provisioner: commands run in the Pod's exec runner container (tools/exec-runner.ts).
  AGENT_EXEC_RUNNER: optionalString.meta({
    description: "the exec runner's socket: `exec` commands run in that container, which holds none of the agent's secrets (agents in Kubernetes Pods)",
    internal: true,
    values: 'a socket path',
  }),
  // Set by the Kubernetes provisioner on the exec runner container, the same image's second role (run.ts).
  AGENT_EXEC_RUNNER_LISTEN: optionalString.meta({
    description: 'makes this process the exec runner, listening on this socket, instead of an agent (the exec runner container of a Kubernetes Pod)',
    internal: true,
    values: 'a socket path',
  }),
  AGENT_EXEC_EGRESS_SOCKET: optionalString.meta({
    description: "the egress gateway's socket for the `exec` relay (no provider keys added there)",
    internal: true,
    values: 'a socket path',
  }),
  AGENT_WORKSPACE_QUOTA_MB: z
    .preprocess((v) => (v === '' || v === undefined ? 1024 : v), z.coerce.number().int().min(1).max(1_048_576))
    .describe(
      'disk quota of the workspace in MB (507 `QUOTA_EXCEEDED`); the account service sets it for its local agents from `AGENT_WORKSPACE_QUOTA_MB` or `AGENT_WORKSPACE_QUOTA_MB_GUEST`',
    ),
  AGENT_RUN_TIMEOUT: seconds(600, { max: 86_400 }).describe('seconds a chat run may take; then an `error` event and `done`'),
  AGENT_MAX_STEPS: z.preprocess((v) => (v === '' || v === undefined ? 20 : v), z.coerce.number().int().min(1).max(200)).describe('model steps (calls) per run'),
  AGENT_MODEL_RETRIES: z
    .preprocess((v) => (v === '' || v === undefined ? 2 : v), z.coerce.number().int().min(0).max(10))
    .describe('retries of a failed model call'),
  AGENT_KEEPALIVE_INTERVAL: seconds(2, { max: 300 }).describe(
    'seconds of silence on a chat stream before a `keepalive` event; short, so that a client can tell a stalled stream (no byte on an open connection) from a quiet run within seconds',
  ),
  AGENT_STREAM_GRACE: seconds(30, { max: 3600 }).describe("seconds a finished run's events stay resumable by `Last-Event-ID`"),
  MODEL_CONTEXT_TOKENS: z
    .preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().min(200).max(10_000_000).optional())
    .meta({
      description:
        'the model\'s context window in tokens: a chat nearing it is compacted (a memory flush, then older turns summarised; docs/agent.md, "Long chats")',
      default: 'unset → known per model (GPT-4o, GPT-4.1, o-series, Claude), else 32000',
      values: 'an integer, 200 to 10000000',
    }),
  // Subagents (server/agent/subagents/) and heartbeat (server/agent/heartbeat/).
  SUBAGENT_TIMEOUT: seconds(600, { max: 86_400 }).describe(
    "seconds a subagent run may take (then status `timeout`); also the cap of the tool's `timeout_seconds`",
  ),
  SUBAGENT_MAX_RUNNING: z
    .preprocess((v) => (v === '' || v === undefined ? 8 : v), z.coerce.number().int().min(1).max(100))
    .describe('subagent runs running at once'),
  SUBAGENT_RETENTION: seconds(3600, { max: 86_400 * 7 }).describe('seconds a finished subagent run is kept after it ended, then purged'),
  SUBAGENT_PURGE_INTERVAL: seconds(60, { max: 86_400 }).describe('seconds between purges of expired runs (reads purge too)'),
  // Set by the account service: the wake time it kept while the agent slept (a past one runs at once).
  HEARTBEAT_NEXT_AT: optionalString.pipe(z.iso.datetime({ offset: true }).optional()).meta({
    description: 'when the first heartbeat is due (a past time runs it right after start)',
    default: 'unset → one interval after start',
    internal: true,
    values: 'an ISO 8601 time with offset',
  }),
  AGENT_STOP_GRACE: seconds(10, { max: 3600 }).describe('seconds a SIGTERM lets runs finish before they are interrupted (each ends with an `error` saying so)'),
  HEARTBEAT_WAIT: z
    .preprocess((v) => (v === '' || v === undefined ? 60 : v), z.coerce.number().min(0).max(3600))
    .describe("seconds a heartbeat waits for the user's active run in its chat before it skips (`0`: skip at once)"),
  // Telegram messenger (server/agent/messenger/).
  TELEGRAM_BOT_TOKEN: optionalString
    .pipe(
      z
        .string()
        .regex(/^\d+:[\w-]+$/, 'must look like 123456:ABC-DEF… (from @BotFather)')
        .optional(),
    )
    .meta({
      description: 'the token @BotFather gives',
      default: 'unset → no bot (status `connected:false`; the contact endpoints still answer)',
      values: '`123456:ABC-DEF…`',
    }),
  TELEGRAM_OWNER_ID: optionalString
    .pipe(
      z
        .string()
        .regex(/^\d{1,20}$/, 'must be a numeric Telegram user id')
        .optional(),
    )
    .meta({ description: 'your numeric Telegram user id: always allowed, whatever its contact says', values: 'a numeric Telegram user id' }),
  TELEGRAM_API_ROOT: optionalString
    .pipe(z.url({ protocol: /^https?$/ }).optional())
    .meta({ description: "Bot API server (a self-hosted `telegram-bot-api`, or the tests' fake)", default: '`https://api.telegram.org`' }),
  TELEGRAM_CONTACT_TOOLS: z
    .preprocess(
      (v) =>
        String(v ?? '')
          .split(',')
          .map((name) => name.trim())
          .filter(Boolean),
      z.array(z.enum(CONTACT_GRANTABLE_TOOLS, { message: `each must be one of ${CONTACT_GRANTABLE_TOOLS.join(', ')}` })),
    )
    .meta({
      description:
        "tools the runs of allowed Telegram contacts other than the owner get, comma-separated (`spawn_subagent` cannot be given: subagents work with the owner's tools)",
      default: 'empty → contacts talk to the agent without tools',
      values: CONTACT_GRANTABLE_TOOLS.map((name) => `\`${name}\``).join(', '),
    }),
  TELEGRAM_GROUPS: z
    .preprocess((v) => (v === '' || v === undefined ? 'off' : v), z.enum(['on', 'off']))
    .describe('`on` answers allowed contacts in group chats too'),
  TELEGRAM_POLL_TIMEOUT: z
    .preprocess((v) => (v === '' || v === undefined ? 30 : v), z.coerce.number().int().min(0).max(50))
    .describe('seconds a `getUpdates` long poll waits'),
  TELEGRAM_RETRY_BASE: seconds(1, { max: 60 }).describe(
    "backoff after Bot API failures: base · 2ⁿ seconds (±20 %), capped by `TELEGRAM_RETRY_MAX`; a 429's `retry_after` wins",
  ),
  TELEGRAM_RETRY_MAX: seconds(60, { max: 3600 }).describe('the cap of that backoff, in seconds'),
  TELEGRAM_WEBHOOK_URL: optionalString
    .pipe(z.url({ protocol: /^https?$/ }).optional())
    .meta({ description: "public URL of this agent's `POST /telegram/webhook`: webhook mode instead of polling", default: 'unset → long polling' }),
  TELEGRAM_WEBHOOK_SECRET: optionalString
    .pipe(
      z
        .string()
        .regex(/^[\w-]{16,256}$/, 'must be 16..256 of A-Z a-z 0-9 _ -')
        .optional(),
    )
    .meta({
      description:
        "Telegram sends it in `X-Telegram-Bot-Api-Secret-Token`; without `TELEGRAM_WEBHOOK_URL` the webhook is someone else's (the account service set it and relays the updates): the agent neither polls nor calls `setWebhook`",
      default: '— (required with `TELEGRAM_WEBHOOK_URL`)',
      values: '16..256 of `A-Z a-z 0-9 _ -`',
    }),
  // Slow request bodies (server/common/http.ts, BodyTimeouts); the account service passes its own to local agents.
  REQUEST_BODY_TIMEOUT: requestBodyTimeout,
  UPLOAD_IDLE_TIMEOUT_SECONDS: uploadIdleTimeout,
});

/** The Unix socket of a local agent's gateway, or the TCP address and token of a pod's; none: direct. */
function egressGateway(env: { AGENT_EGRESS_SOCKET?: string; AGENT_EGRESS_URL?: string; AGENT_EGRESS_TOKEN?: string }): EgressGatewayAddress | undefined {
  if (env.AGENT_EGRESS_SOCKET) return { socketPath: env.AGENT_EGRESS_SOCKET };
  if (env.AGENT_EGRESS_URL && env.AGENT_EGRESS_TOKEN) return { url: new URL(env.AGENT_EGRESS_URL), token: env.AGENT_EGRESS_TOKEN };
  return undefined;
}

const schema = agentEnv
  .superRefine((env, ctx) => {
    for (const name of ['MODEL', 'HEARTBEAT_MODEL', 'TASK_MODEL'] as const) {
      const spec = env[name];
      if (!spec) continue;
      try {
        parseModelSpec(spec);
      } catch (error) {
        ctx.addIssue({ code: 'custom', path: [name], message: (error as Error).message });
      }
    }
    if (env.TELEGRAM_WEBHOOK_URL && !env.TELEGRAM_WEBHOOK_SECRET) {
      ctx.addIssue({ code: 'custom', path: ['TELEGRAM_WEBHOOK_SECRET'], message: 'is required with TELEGRAM_WEBHOOK_URL' });
    }
    if (env.AGENT_EGRESS_URL && !env.AGENT_EGRESS_TOKEN) {
      ctx.addIssue({ code: 'custom', path: ['AGENT_EGRESS_TOKEN'], message: 'is required with AGENT_EGRESS_URL' });
    }
    if (!env.AGENT_SECRET && !env.AGENT_SECRET_SHA256) {
      ctx.addIssue({ code: 'custom', path: ['AGENT_SECRET'], message: 'AGENT_SECRET or AGENT_SECRET_SHA256 is required' });
    }
  })
  .transform((env) => ({
    port: env.AGENT_PORT,
    host: env.HOST,
    socketPath: env.AGENT_SOCKET,
    egress: egressGateway(env),
    // The plain secret is hashed here and never kept (spec: the agent keeps a SHA-256 hash).
    secretSha256: Buffer.from(
      env.AGENT_SECRET_SHA256 ??
        createHash('sha256')
          .update(env.AGENT_SECRET ?? '')
          .digest('hex'),
      'hex',
    ),
    name: env.AGENT_NAME,
    workspace: path.resolve(env.AGENT_WORKSPACE),
    /** Where agent.db lives, beside the workspace (store.ts). */
    stateDir: path.resolve(env.AGENT_STATE_DIR ?? `${path.resolve(env.AGENT_WORKSPACE)}.state`),
    workspaceQuotaBytes: env.AGENT_WORKSPACE_QUOTA_MB * 1024 * 1024,
    model: env.MODEL,
    chat: {
      model: env.MODEL ? parseModelSpec(env.MODEL) : undefined,
      /** Key for `openai-compatible:` models (OpenAI and Anthropic read OPENAI_API_KEY / ANTHROPIC_API_KEY). */
      modelApiKey: env.MODEL_API_KEY,
      modelRetries: env.AGENT_MODEL_RETRIES,
      execEnabled: env.AGENT_EXEC === 'on',
      /** Web tools only through a gateway, which judges their addresses (a standalone agent has none). */
      webTools: egressGateway(env) ? env.AGENT_WEB_TOOLS : [],
      execTimeoutMs: env.AGENT_EXEC_TIMEOUT * 1000,
      execSandbox: env.AGENT_EXEC_SANDBOX,
      execProxy: env.AGENT_EXEC_PROXY,
      execRunner: env.AGENT_EXEC_RUNNER,
      /** Where the exec relay sends commands' traffic: a gateway socket of its own, never the agent's. */
      execEgressSocket: env.AGENT_EXEC_EGRESS_SOCKET,
      runTimeoutMs: env.AGENT_RUN_TIMEOUT * 1000,
      maxSteps: env.AGENT_MAX_STEPS,
      keepaliveMs: env.AGENT_KEEPALIVE_INTERVAL * 1000,
      streamGraceMs: env.AGENT_STREAM_GRACE * 1000,
      /** MODEL_CONTEXT_TOKENS; unset: known per model (chat/compaction.ts). */
      contextTokens: env.MODEL_CONTEXT_TOKENS,
    },
    telegram: {
      /** Unset: no bot; the contact endpoints still answer. */
      token: env.TELEGRAM_BOT_TOKEN,
      ownerId: env.TELEGRAM_OWNER_ID,
      apiRoot: env.TELEGRAM_API_ROOT?.replace(/\/+$/, '') ?? 'https://api.telegram.org',
      groups: env.TELEGRAM_GROUPS === 'on',
      /** What a contact's run may use (TELEGRAM_CONTACT_TOOLS); the owner's runs get every tool. */
      contactTools: env.TELEGRAM_CONTACT_TOOLS,
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
    tasks: {
      max: env.TASKS_MAX,
      minIntervalMs: env.TASK_MIN_INTERVAL * 1000,
      /** TASK_MODEL; unset: the chat's model. */
      model: env.TASK_MODEL ? parseModelSpec(env.TASK_MODEL) : undefined,
      /** USER_TIMEZONE; unset: the stored one, else UTC. */
      userTimezone: env.USER_TIMEZONE,
    },
    heartbeat: {
      /** HEARTBEAT_MODEL; unset: the chat's model. */
      model: env.HEARTBEAT_MODEL ? parseModelSpec(env.HEARTBEAT_MODEL) : undefined,
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
    /** Seconds a request body may take in full; uploads must deliver 1 KiB in each window of the second (common/http.ts). */
    requestBodyTimeoutSeconds: env.REQUEST_BODY_TIMEOUT,
    uploadIdleTimeoutSeconds: env.UPLOAD_IDLE_TIMEOUT_SECONDS,
    metricsToken: env.METRICS_TOKEN,
    /** Set: every request is traced and exported over OTLP/HTTP (common/tracing.ts). */
    otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
    logLevel: env.LOG_LEVEL,
    logPretty: env.LOG_PRETTY === '1',
  }));

export type AgentConfig = z.output<typeof schema>;

/** The exec runner's socket when this process is a Pod's exec runner (which reads nothing else of the configuration). */
export const execRunnerListen = (env: NodeJS.ProcessEnv): string | undefined => agentEnv.shape.AGENT_EXEC_RUNNER_LISTEN.parse(env.AGENT_EXEC_RUNNER_LISTEN);

export const loadAgentConfig = (env: NodeJS.ProcessEnv): AgentConfig => parseConfig(schema, env);
