import { isIP } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { httpUrl, logLevel, logPretty, optionalString, otlpEndpoint, parseConfig, port, requestBodyTimeout, uploadIdleTimeout } from '../common/config.js';
import { parseModelSpec } from '@contracts/agent/model-spec.js';
import { oauthConfig, oauthEnv } from './auth/oauth/config.js';
import { captchaConfig, captchaEnv, captchaProblems } from './captcha/config.js';

const count = (fallback: number, min: number, max: number) =>
  z.preprocess((v) => (v === '' || v === undefined ? fallback : v), z.coerce.number().int().min(min).max(max));

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const jsonStringArray = z.string().transform((v, ctx) => {
  try {
    return z.array(z.string().min(1)).min(1).parse(JSON.parse(v));
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be a JSON array of strings' });
    return z.NEVER;
  }
});
const intSetting = (fallback: number, { min, max }: { min: number; max: number }) =>
  z.preprocess((v) => (v === '' || v === undefined ? fallback : v), z.coerce.number().int().min(min).max(max));

/**
 * AGENT_MAX_RUNNING's default: what this host's memory holds at about 100 MB per idle agent,
 * after 1 GB for the service itself and the system (at least one agent).
 */
export const defaultMaxRunningAgents = (totalBytes = os.totalmem()): number => Math.max(1, Math.floor((totalBytes - 1024 ** 3) / (100 * 1024 ** 2)));

/** Express's names for address ranges (proxy-addr): 127.0.0.0/8 and ::1, 169.254.0.0/16 and fe80::/10, private ranges and fc00::/7. */
const TRUSTED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An IP address, or a CIDR block of one (`10.0.0.0/8`, `fd00::/8`); no zone ids, no shorthand like `1` for 0.0.0.1. */
function isAddressOrBlock(entry: string): boolean {
  const [address = '', prefix, ...more] = entry.split('/');
  const family = address.includes('%') ? 0 : isIP(address);
  if (family === 0 || more.length > 0) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
}

/**
 * TRUST_PROXY → express's `trust proxy`: a hop count, or the senders whose `X-Forwarded-For` is
 * believed. Checked here because express reads `1` in a list as the address 0.0.0.1 and fails
 * only at start on a word it does not know; `true` (believe every sender) would let any client
 * pick its own address for the rate limits (docs/security.md, Trusted proxies).
 */
const trustProxySetting = optionalString
  .transform((value, ctx): number | string[] | undefined => {
    if (value === undefined) return undefined;
    const trimmed = value.trim();
    if (/^\d{1,2}$/.test(trimmed)) return Number(trimmed) === 0 ? undefined : Number(trimmed);
    const entries = trimmed
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean);
    const wrong = entries.filter((entry) => !TRUSTED_RANGES.has(entry) && !isAddressOrBlock(entry));
    if (entries.length > 0 && wrong.length === 0) return entries;
    ctx.addIssue({
      code: 'custom',
      message: `${wrong.map((entry) => JSON.stringify(entry)).join(', ')} is not a hop count, \`loopback\`, \`linklocal\`, \`uniquelocal\`, an IP address or a CIDR block${/^(?:true|yes|on|all|\*)$/i.test(trimmed) ? ' (believing every sender would let any client choose its address: name the proxies, or give their number of hops)' : ''}`,
    });
    return z.NEVER;
  })
  .meta({
    description:
      'who may say where a request came from (`X-Forwarded-For`): the number of proxies in front of the service, or the proxies themselves; rate limits and sign-up caps count the address this gives',
    default: 'unset → the connecting address (no proxy believed)',
    values: 'a hop count (`1`), or a comma-separated list of `loopback`, `linklocal`, `uniquelocal`, IP addresses and CIDR blocks (`10.0.0.0/8`)',
  });

/**
 * AGENT_WARM_POOL's default: two pre-started agents, fewer when the memory free right now holds
 * fewer agents at their limit (AGENT_MEMORY_MB); a pool must never be what pushes a host into swap.
 */
export const defaultWarmPool = (memoryMb: number, freeBytes = os.freemem()): number => Math.max(0, Math.min(2, Math.floor(freeBytes / (memoryMb * 1024 ** 2))));

/**
 * The account service's environment. Each variable's meaning lives on its schema (`.describe`, or
 * `.meta` when the default or the allowed values need words): `npm run docs` turns them into
 * docs/configuration.md and .env.example.
 */
export const accountEnv = z.object({
  PORT: port(3000).describe('listen port'),
  HOST: z.string().min(1).default('127.0.0.1').describe('listen address'),
  DATA_DIR: z.string().min(1).default('./data').describe('embedded database, generated keys, local outbox'),
  DATABASE_URL: optionalString
    .pipe(
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
        .optional(),
    )
    .meta({
      description: '`postgres://…` for PostgreSQL (needed for several instances)',
      default: 'unset → embedded PGlite in `DATA_DIR/account-db`',
      values: '`postgres://` or `postgresql://` URL',
    }),
  BASE_URL: optionalString
    .pipe(httpUrl.optional())
    .meta({ description: 'public address of this service (token issuer, links)', default: '`http://HOST:PORT`' }),
  FRONTEND_URL: optionalString.pipe(httpUrl.optional()).meta({
    description: "address of the web client (e-mail links, OAuth redirects); when its origin differs from `BASE_URL`'s, CORS allows that one origin (no other)",
    default: '`BASE_URL`',
  }),
  REDIS_URL: optionalString
    .pipe(
      z
        .string()
        .regex(/^rediss?:\/\//, 'must be a redis:// URL')
        .optional(),
    )
    .meta({ description: '`redis://…` to share rate limits across instances', default: 'unset → in-memory counters', values: '`redis://` or `rediss://` URL' }),
  TRUST_PROXY: trustProxySetting,
  METRICS_TOKEN: optionalString
    .pipe(z.string().min(16, 'must be at least 16 characters').optional())
    .meta({ description: '`GET /metrics` then needs `Authorization: Bearer <METRICS_TOKEN>`', default: 'unset → `/metrics` answers loopback callers only' }),
  OTEL_EXPORTER_OTLP_ENDPOINT: otlpEndpoint,
  SIGNING_KEYS_FILE: optionalString.meta({
    description: 'token signing keys (private Ed25519 JWKs, newest first); generated on first start',
    default: '`DATA_DIR/signing-keys.json`',
    values: 'a file path',
  }),
  AGENT_PROVISIONER: z
    .enum(['local', 'static', 'kubernetes'])
    .default('local')
    .describe(
      '`local`: one agent process per user on this machine; `static`: agents registered with `npm run agents`; `kubernetes`: one StatefulSet per user in `KUBE_NAMESPACE` ([deployment](deployment.md#kubernetes))',
    ),
  // Agents on Kubernetes (agents/provisioners/kubernetes/, deploy/kubernetes/).
  KUBE_CONFIG: optionalString.meta({
    description: 'the kubeconfig file the `kubernetes` provisioner uses',
    default: 'unset → the service account of the Pod this service runs in',
    values: 'a file path',
  }),
  KUBE_NAMESPACE: z
    .string()
    .regex(DNS_LABEL, 'must be a DNS label')
    .default('agents')
    .describe("the namespace of the agents' StatefulSets, Secrets, workspace claims and Services"),
  KUBE_AGENT_IMAGE: z.string().min(1).default('agent-accounts/agent:latest').describe("the agents' container image (deploy/docker/agent.Dockerfile)"),
  KUBE_AGENT_COMMAND: optionalString.pipe(jsonStringArray.optional()).meta({
    description: "the agent container's command instead of the image's (the test harness runs this repository's build)",
    internal: true,
    values: 'a JSON array of strings',
  }),
  KUBE_RUNTIME_CLASS: optionalString.pipe(z.string().regex(DNS_LABEL, 'must be a DNS label').optional()).meta({
    description: "the agents' RuntimeClass: a sandboxed runtime such as gVisor (`gvisor`) or Kata (`kata`), as tenants' code runs there",
    default: 'unset → the cluster default runtime',
    values: 'a RuntimeClass name',
  }),
  KUBE_STORAGE_CLASS: optionalString.meta({
    description: "the StorageClass of the agents' workspace claims",
    default: 'unset → the cluster default class',
    values: 'a StorageClass name',
  }),
  KUBE_WORKSPACE_SIZE: z
    .string()
    .regex(/^\d+(Mi|Gi|Ti)$/, 'must be a size such as 512Mi or 1Gi')
    .default('1Gi')
    .describe("size of each agent's workspace claim (its files and agent.db)"),
  KUBE_EGRESS_URL: z
    .url({ protocol: /^http$/ })
    .default('http://account-egress.agent-accounts.svc:8081')
    .describe("where agent Pods reach the account service's egress gateway (the `account-egress` Service)"),
  KUBE_EGRESS_HOST: z.string().min(1).default('0.0.0.0').describe('the address the egress gateway listens on for agent Pods'),
  KUBE_EGRESS_PORT: port(8081).describe('the port the egress gateway listens on for agent Pods'),
  KUBE_START_TIMEOUT: z
    .preprocess((v) => (v === '' || v === undefined ? 60 : v), z.coerce.number().min(1).max(600))
    .describe('seconds a request waits for a waking agent before 503 `AGENT_STARTING` with `Retry-After`'),
  AGENT_IDLE_TIMEOUT: z
    .preprocess((v) => (v === '' || v === undefined ? 1800 : v), z.coerce.number().int().min(0))
    .describe(
      'seconds without use before a `local` agent is stopped (`0`: never); only an agent that reports itself idle is stopped (no chat or subagent run, heartbeat, request or Telegram long poll in flight)',
    ),
  AGENT_STOP_GRACE: z
    .preprocess((v) => (v === '' || v === undefined ? 10 : v), z.coerce.number().min(0).max(3600))
    .describe(
      'seconds a stopping agent (idle, eviction, shutdown) gets to finish its runs before it interrupts them; a run it abandons ends with an `error` saying so',
    ),
  // No schema default: it depends on the host, and the generated docs must not.
  AGENT_MAX_RUNNING: z
    .preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().min(1).max(1_000_000).optional())
    .meta({
      description:
        'local agents running at once; at the cap the least recently used idle agent is stopped (state on disk, back on its next call); when all are busy a call that needs another agent gets 503 `AGENT_CAPACITY` with `Retry-After`',
      default: 'host memory ÷ 100 MB, after 1 GB for the service (at least 1)',
    }),
  // No schema default: it depends on the host's free memory, and the generated docs must not.
  AGENT_WARM_POOL: z
    .preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().min(0).max(1000).optional())
    .meta({
      description:
        "local agents kept started ahead of need, each with a fresh empty workspace, so that a new user's first request is served by one at once (it becomes theirs); counted in `AGENT_MAX_RUNNING`, refilled in the background only while a slot is free, and the first stopped when a user needs the slot; `0` turns the pool off",
      default: '2, fewer when free memory ÷ `AGENT_MEMORY_MB` holds fewer',
    }),
  AGENT_STREAMS_PER_USER: z.coerce
    .number()
    .int()
    .min(1)
    .max(100_000)
    .default(32)
    .describe(
      'event streams (chat replies, reconnects, subscriptions) one user may have open through this instance at once; more get 429 `TOO_MANY_STREAMS` with `Retry-After`',
    ),
  AGENT_REQUESTS_PER_USER: intSetting(8, { min: 1, max: 100_000 }).describe(
    'REST requests one user may have in flight to their agent through this instance at once, event streams aside (`AGENT_STREAMS_PER_USER`); more get 429 `TOO_MANY_AGENT_REQUESTS` with `Retry-After`',
  ),
  // Slow request bodies (server/common/http.ts, BodyTimeouts), here and on the local agents.
  REQUEST_BODY_TIMEOUT: requestBodyTimeout,
  UPLOAD_IDLE_TIMEOUT_SECONDS: uploadIdleTimeout,
  AGENT_WAKE_POLL: z
    .preprocess((v) => (v === '' || v === undefined ? 15 : v), z.coerce.number().min(0.05).max(3600))
    .describe(
      "seconds between the wake scheduler's rounds: sleeping agents whose next heartbeat is due are started (one instance at a time per agent); failed wakes are retried with backoff",
    ),
  // Local agents' sandbox (agents/provisioners/local/sandbox.ts, launcher.ts) and egress (agents/egress/gateway.ts).
  AGENT_SANDBOX: z
    .preprocess((v) => (v === '' || v === undefined ? 'on' : v), z.enum(['on', 'off']))
    .describe('`off` runs local agents without their sandbox (warned at every start); without bubblewrap they run without `exec` ([security](security.md))'),
  AGENT_SANDBOX_BWRAP: z.string().min(1).default('bwrap').describe('the bubblewrap binary'),
  AGENT_MEMORY_MB: intSetting(1024, { min: 128, max: 1_048_576 }).describe('memory limit per agent in MB (its cgroup, `/tmp` included)'),
  AGENT_MAX_PROCESSES: intSetting(256, { min: 16, max: 100_000 }).describe('processes and threads per agent'),
  AGENT_CPU_PERCENT: intSetting(100, { min: 10, max: 10_000 }).describe('CPU share per agent, in percent of one core'),
  AGENT_MAX_OPEN_FILES: intSetting(1024, { min: 64, max: 1_048_576 }).describe('open files per agent'),
  AGENT_TMP_MB: intSetting(64, { min: 1, max: 65_536 }).describe("size in MB of each sandbox's private `/tmp`"),
  AGENT_EGRESS_ALLOW: optionalString.meta({
    description: 'hosts (`api.example.com`, https) or origins (`http://10.0.0.5:8080`) agents may reach besides their model and Telegram',
    values: 'comma-separated hosts or origins',
  }),
  AGENT_EGRESS_MAX_CONNECTIONS: intSetting(32, { min: 1, max: 100_000 }).describe(
    'tunnels and requests one agent (its `exec` commands included) may have open through its egress gateway at once; more get 503 `EGRESS_BUSY`',
  ),
  AGENT_EGRESS_IDLE_TIMEOUT: z
    .preprocess((v) => (v === '' || v === undefined ? 300 : v), z.coerce.number().min(0.1).max(86_400))
    .describe('seconds without a byte either way before the egress gateway cuts a tunnel or request (a model must start answering within it)'),
  AGENT_EGRESS_MAX_DURATION: z
    .preprocess(
      (v) => (v === '' || v === undefined ? 3600 : v),
      z.coerce
        .number()
        .min(0.1)
        .max(7 * 86_400),
    )
    .describe('seconds a tunnel or request through the egress gateway may last in all, however busy'),
  AGENT_EGRESS_MAX_BODY_MB: intSetting(32, { min: 1, max: 65_536 }).describe(
    'MB of request body the egress gateway forwards per plain-HTTP request (model calls included); larger ones get 413 `EGRESS_BODY_TOO_LARGE`',
  ),
  AGENT_EXEC_NETWORK: z
    .preprocess((v) => (v === '' || v === undefined ? 'none' : v), z.enum(['none', 'allowlist']))
    .describe(
      '`allowlist`: `exec` commands may reach the allow-listed hosts through the gateway as their HTTP(S) proxy (the risks: [security](security.md)); `none`: commands have no network',
    ),
  MODEL_DAILY_TOKENS: intSetting(2_000_000, { min: 0, max: Number.MAX_SAFE_INTEGER }).describe(
    'model tokens (in + out) a full account may spend per UTC day through its local agent; `0`: no ceiling. Past it a chat message gets 429 `BUDGET_EXCEEDED` with Retry-After until midnight UTC, and a model call inside a run ends the run with an `error` event naming it',
  ),
  MODEL_CALL_MAX_TOKENS: intSetting(4096, { min: 1, max: 10_000_000 }).describe(
    'the output ceiling (`max_tokens`) the egress gateway sets on a model call that names none; each call holds its ceiling plus the size of its prompt against the daily budgets until its answer ends',
  ),
  MODEL_DAILY_TOKENS_GUEST: intSetting(200_000, { min: 0, max: Number.MAX_SAFE_INTEGER }).describe('the same for a guest; `0`: no ceiling'),
  MODEL_DAILY_TOKENS_GUESTS_TOTAL: intSetting(0, { min: 0, max: Number.MAX_SAFE_INTEGER }).meta({
    description:
      'all guests together per UTC day; set it on any public deployment (e.g. a tenth of what you are willing to pay for a day); full accounts are unaffected',
    default: '`0` (no ceiling)',
  }),
  AGENT_WORKSPACE_QUOTA_MB: intSetting(1024, { min: 1, max: 1_048_576 }).describe("disk quota in MB of an account's workspace (507 `QUOTA_EXCEEDED`)"),
  AGENT_WORKSPACE_QUOTA_MB_GUEST: intSetting(100, { min: 1, max: 1_048_576 }).describe("disk quota in MB of a guest's workspace"),
  // What the egress gateway forwards model and Telegram calls to, and the keys it adds.
  MODEL: optionalString.meta({
    description: "the local agents' model, same syntax as the agent's `MODEL`; agents get it without any key",
    default: 'unset → agents answer that no model is configured',
    values: '`openai-compatible:<base_url>#<model>`, `openai:<model>`, `anthropic:<model>`',
  }),
  MODEL_API_KEY: optionalString.describe(
    "bearer key for an `openai-compatible:` model; stays in the account service, added to agents' calls by the egress gateway",
  ),
  OPENAI_API_KEY: optionalString.describe('key for `openai:` models; added by the egress gateway'),
  OPENAI_BASE_URL: optionalString.pipe(httpUrl.optional()).describe('another endpoint for `openai:` models'),
  ANTHROPIC_API_KEY: optionalString.describe('key for `anthropic:` models; added by the egress gateway'),
  ANTHROPIC_BASE_URL: optionalString.pipe(httpUrl.optional()).describe('another endpoint for `anthropic:` models'),
  TELEGRAM_API_ROOT: optionalString
    .pipe(httpUrl.optional())
    .meta({ description: "the Telegram Bot API the local agents' bots reach through the gateway", default: '`https://api.telegram.org`' }),
  TELEGRAM_WEBHOOK_BASE: optionalString.pipe(httpUrl.optional()).meta({
    description:
      "the account's public base URL (https in production): users' bots are connected in webhook mode at `{base}/api/v1/telegram/{opaque id}/webhook`, so their agents may sleep",
    default: "unset → users' bots long-poll from their agents",
  }),
  AGENT_SECRETS_KEY: optionalString
    .pipe(
      z
        .string()
        .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be 32 bytes, base64-encoded')
        .optional(),
    )
    .meta({
      description: 'the key that seals agent secrets in the registry',
      default: 'generated into `DATA_DIR/agent-secrets.key`',
      values: '32 bytes, base64',
    }),
  WALLET_CHAIN_ID: z
    .preprocess((v) => (v === '' || v === undefined ? 1 : v), z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER))
    .describe('EIP-155 chain id written into wallet (SIWE) challenges'),
  RPC_URL: optionalString.pipe(httpUrl.optional()).meta({
    description: 'JSON-RPC endpoint of that chain, used only to verify EIP-1271/ERC-6492 (smart-contract wallet) signatures',
    default: 'unset → smart-wallet signatures refused (503)',
  }),
  // Passkeys (auth/passkey): the relying party id is a host name, the web client's or a parent domain of it.
  WEBAUTHN_RP_ID: optionalString
    .pipe(
      z
        .string()
        .regex(/^(?=.{1,253}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/, 'must be a lower-case host name')
        .optional(),
    )
    .meta({
      description: "passkeys' relying party id: that host or a parent domain of it (browsers refuse IP addresses: use a name, `localhost` included)",
      default: 'the host of `WEBAUTHN_ORIGIN`',
    }),
  WEBAUTHN_RP_NAME: optionalString
    .pipe(z.string().max(64).optional())
    .meta({ description: 'the service name authenticators show', default: '`Agent Accounts`' }),
  WEBAUTHN_ORIGIN: optionalString
    .pipe(httpUrl.optional())
    .meta({ description: "the only origin passkey answers may come from (the web client's)", default: "`FRONTEND_URL`'s origin" }),
  SMTP_URL: optionalString.pipe(z.url({ protocol: /^smtps?$/, error: 'must be an smtp:// or smtps:// URL' }).optional()).meta({
    description: '`smtp://user:pass@host:587` or `smtps://…:465` (nodemailer URL; options as query, e.g. `?ignoreTLS=true`)',
    default: 'unset → local outbox `DATA_DIR/outbox/*.eml`',
    values: '`smtp://` or `smtps://` URL',
  }),
  MAIL_FROM: optionalString
    .pipe(
      z
        .string()
        .max(320)
        .regex(/^(?:[^<>\r\n]*<[^\s<>@]+@[^\s<>@]+>|[^\s<>@]+@[^\s<>@]+)$/, 'must be an address, or "Name <address>"')
        .optional(),
    )
    .meta({ description: 'sender of sign-in mail', default: "`Agent Accounts <no-reply@BASE_URL's host>`", values: '`address` or `Name <address>`' }),
  DEV_OUTBOX: optionalString
    .pipe(z.enum(['0', '1']).optional())
    .describe(
      '`1` serves `GET /dev/outbox` (and `/dev/outbox.json`) listing the local outbox to callers on this machine only (loopback, no proxy); refused with `NODE_ENV=production` or with `SMTP_URL`',
    ),
  NODE_ENV: optionalString.describe('`production` refuses development-only settings (`DEV_OUTBOX`)'),
  RATE_LIMIT_MULTIPLIER: z
    .preprocess((v) => (v === '' || v === undefined ? 1 : v), z.coerce.number().int().min(1).max(100_000))
    .describe('scales every rate limit (the abuse limits too); for load tests and development only'),
  IPV6_SUBNET: count(64, 32, 128).describe(
    'prefix length an IPv6 client is counted on by every per-client limit; an IPv4-mapped address (`::ffff:a.b.c.d`) counts as the IPv4 address',
  ),
  GUEST_RETENTION_DAYS: count(30, 0, 36_500).describe(
    'guests with no sign-in, refresh or session use for this many days are deleted with their agent and workspace by an hourly sweep; `0`: kept forever',
  ),
  GUEST_SIGNUPS_PER_DAY: count(30, 1, 1_000_000).describe(
    'new accounts that no verified e-mail or provider vouches for (guests, and wallet accounts unless `WALLET_ACCOUNTS=full`) per client (IPv4 address or IPv6 prefix) per day; a returning device id or wallet is never refused',
  ),
  GUEST_SIGNUPS_PER_HOUR: count(2000, 1, 100_000_000).describe(
    'new accounts that nothing vouches for (as `GUEST_SIGNUPS_PER_DAY`) per hour, service-wide; past it they get 429 `GUEST_SIGNUPS_PAUSED` (other sign-in methods, returning devices and wallets still work)',
  ),
  WALLET_ACCOUNTS: z
    .preprocess((v) => (v === '' || v === undefined ? 'unverified' : v), z.enum(['unverified', 'full']))
    .describe(
      '`unverified`: an account created by a wallet is on guest terms (counted under `GUEST_SIGNUPS_PER_*`, guest quotas and budgets) until a verified e-mail or a provider account is linked; `full`: a wallet vouches for a full account (a fresh key is one, so only where accounts cost nothing worth abusing). Applies to accounts created, and guests upgraded, while it is set ([security](security.md#accounts-nothing-vouches-for))',
    ),

  WEBHOOK_ALLOW_PRIVATE: optionalString
    .pipe(z.enum(['0', '1']).optional())
    .describe(
      '`1` lets webhook endpoints be on loopback, private, link-local and other non-public addresses. Unsafe: whoever may register an endpoint (an admin, an API key with `webhooks:write`) can then make this service send requests into its own network; for tests and closed networks only',
    ),
  WEBHOOK_POLL: z
    .preprocess((v) => (v === '' || v === undefined ? 0.5 : v), z.coerce.number().min(0.01).max(60))
    .describe("seconds between the webhook delivery worker's looks for due deliveries (on each instance)"),
  WEBHOOK_TIMEOUT: z
    .preprocess((v) => (v === '' || v === undefined ? 15 : v), z.coerce.number().min(0.1).max(300))
    .describe('seconds a webhook endpoint has to answer one delivery attempt; a delivery whose instance died is sent again after twice this plus 5 s'),
  ADMIN_EMAILS: optionalString.meta({
    description:
      'comma-separated e-mail addresses: an account whose verified address is listed becomes an admin at start and whenever it signs up or in (docs/admin.md); removing an address does not demote (use `npm run admin -- revoke`)',
    values: 'comma-separated addresses',
  }),
  TOKEN_METADATA_CLAIM: optionalString
    .pipe(
      z
        .string()
        .regex(/^[a-z][a-z0-9_]{0,31}$/, 'must be a lowercase claim name')
        .refine((name) => !['iss', 'aud', 'sub', 'sid', 'jti', 'typ', 'iat', 'exp', 'nbf', 'guest', 'gen'].includes(name), 'names a registered claim')
        .optional(),
    )
    .meta({
      description:
        "claim name under which access tokens carry the user's operator metadata (`PATCH /admin/users/{id}`); minted tokens carry it as it was at sign-in or the last refresh",
      default: 'unset → tokens carry no metadata',
      values: 'lowercase claim name, not a registered one',
    }),
  LOG_LEVEL: logLevel,
  LOG_PRETTY: logPretty,
  ...oauthEnv,
  ...captchaEnv,
});

const schema = accountEnv
  .superRefine((env, ctx) => {
    // The outbox page shows every sign-in link and code: never where real people sign in.
    if (env.DEV_OUTBOX === '1' && env.NODE_ENV === 'production')
      ctx.addIssue({ code: 'custom', path: ['DEV_OUTBOX'], message: 'is not allowed when NODE_ENV=production' });
    if (env.MODEL) {
      try {
        parseModelSpec(env.MODEL);
      } catch (error) {
        ctx.addIssue({ code: 'custom', path: ['MODEL'], message: (error as Error).message });
      }
    }
    if (env.DEV_OUTBOX === '1' && env.SMTP_URL)
      ctx.addIssue({ code: 'custom', path: ['DEV_OUTBOX'], message: 'lists the local outbox, which is not used when SMTP_URL is set' });
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
      guestRetentionDays: env.GUEST_RETENTION_DAYS,
      /** Verified addresses made admins at start and at sign-in (users/roles.ts), lowercase. */
      adminEmails: (env.ADMIN_EMAILS ?? '')
        .split(',')
        .map((email) => email.trim().toLowerCase())
        .filter(Boolean),
      tokenMetadataClaim: env.TOKEN_METADATA_CLAIM,
      /** New guests per client per day and service-wide per hour (ratelimit/policy.ts). */
      guestSignupsPerDay: env.GUEST_SIGNUPS_PER_DAY,
      guestSignupsPerHour: env.GUEST_SIGNUPS_PER_HOUR,
      walletAccounts: env.WALLET_ACCOUNTS,
      /** Unset: no CAPTCHA (captcha/). */
      captcha: captchaConfig(env),
      agentProvisioner: env.AGENT_PROVISIONER,
      agentIdleTimeoutSeconds: env.AGENT_IDLE_TIMEOUT,
      agentStopGraceMs: env.AGENT_STOP_GRACE * 1000,
      /** Local agents running at once; at the cap the least recently used idle one is stopped. */
      agentMaxRunning: env.AGENT_MAX_RUNNING ?? defaultMaxRunningAgents(),
      /** Local agents started ahead of need for new users (agents/provisioners/local/warm-pool.ts). */
      agentWarmPool: env.AGENT_WARM_POOL ?? defaultWarmPool(env.AGENT_MEMORY_MB),
      agentWakePollMs: env.AGENT_WAKE_POLL * 1000,
      /** Relayed event streams, and other REST requests in flight, one user may hold at once (agents/proxy/user-slots.ts). */
      agentStreamsPerUser: env.AGENT_STREAMS_PER_USER,
      agentRequestsPerUser: env.AGENT_REQUESTS_PER_USER,
      /** How long a request body may take; uploads must progress instead (common/http.ts, BodyTimeouts); local agents get the same. */
      bodyTimeouts: { requestSeconds: env.REQUEST_BODY_TIMEOUT, uploadIdleSeconds: env.UPLOAD_IDLE_TIMEOUT_SECONDS },
      agentSecretsKey: env.AGENT_SECRETS_KEY,
      kubernetes: {
        kubeconfig: env.KUBE_CONFIG,
        namespace: env.KUBE_NAMESPACE,
        image: env.KUBE_AGENT_IMAGE,
        command: env.KUBE_AGENT_COMMAND,
        runtimeClass: env.KUBE_RUNTIME_CLASS,
        storageClass: env.KUBE_STORAGE_CLASS,
        workspaceSize: env.KUBE_WORKSPACE_SIZE,
        egressUrl: env.KUBE_EGRESS_URL,
        egressHost: env.KUBE_EGRESS_HOST,
        egressPort: env.KUBE_EGRESS_PORT,
        startTimeoutMs: env.KUBE_START_TIMEOUT * 1000,
        /** Agents running across the cluster; unset: no cap (the host-memory default is a local one). */
        maxRunning: env.AGENT_MAX_RUNNING,
      },
      agentLauncher: {
        sandbox: env.AGENT_SANDBOX,
        bwrap: env.AGENT_SANDBOX_BWRAP,
        memoryBytes: env.AGENT_MEMORY_MB * 1024 * 1024,
        maxProcesses: env.AGENT_MAX_PROCESSES,
        cpuPercent: env.AGENT_CPU_PERCENT,
        maxOpenFiles: env.AGENT_MAX_OPEN_FILES,
        tmpBytes: env.AGENT_TMP_MB * 1024 * 1024,
        execNetwork: env.AGENT_EXEC_NETWORK,
      },
      /** Disk quota of a workspace, by who owns it (a guest who signs up gets the larger one at the agent's next start). */
      workspaceQuotaMb: { account: env.AGENT_WORKSPACE_QUOTA_MB, guest: env.AGENT_WORKSPACE_QUOTA_MB_GUEST },
      /** Tokens per UTC day; 0: no ceiling (agents/egress/model-usage.ts). */
      modelBudget: { account: env.MODEL_DAILY_TOKENS, guest: env.MODEL_DAILY_TOKENS_GUEST, guestsTotal: env.MODEL_DAILY_TOKENS_GUESTS_TOTAL },
      /** The output ceiling the gateway sets on model calls that name none (agents/egress/model-usage.ts). */
      modelCallMaxTokens: env.MODEL_CALL_MAX_TOKENS,
      egress: {
        model: env.MODEL,
        modelApiKey: env.MODEL_API_KEY,
        openaiApiKey: env.OPENAI_API_KEY,
        openaiBaseUrl: env.OPENAI_BASE_URL,
        anthropicApiKey: env.ANTHROPIC_API_KEY,
        anthropicBaseUrl: env.ANTHROPIC_BASE_URL,
        telegramApiRoot: env.TELEGRAM_API_ROOT ?? 'https://api.telegram.org',
        allow: (env.AGENT_EGRESS_ALLOW ?? '')
          .split(',')
          .map((entry) => entry.trim())
          .filter(Boolean),
      },
      /** Bounds on each agent's tunnels and requests through its gateway (agents/egress/gateway.ts). */
      egressLimits: {
        maxConnections: env.AGENT_EGRESS_MAX_CONNECTIONS,
        idleTimeoutMs: env.AGENT_EGRESS_IDLE_TIMEOUT * 1000,
        maxDurationMs: env.AGENT_EGRESS_MAX_DURATION * 1000,
        maxBodyBytes: env.AGENT_EGRESS_MAX_BODY_MB * 1024 * 1024,
      },
      /** Users' bots (messenger/bots.ts): set → webhook mode at `{base}/api/v1/telegram/{id}/webhook`. */
      telegramWebhookBase: env.TELEGRAM_WEBHOOK_BASE?.replace(/\/+$/, ''),
      /** SIWE (auth/wallet): the EIP-155 chain id in challenges; the JSON-RPC endpoint for smart-wallet signatures. */
      walletChainId: env.WALLET_CHAIN_ID,
      rpcUrl: env.RPC_URL,
      /** Passkeys: responses must come from the web client's origin and name this relying party id. */
      passkey: (() => {
        const frontend = new URL((env.FRONTEND_URL ?? baseUrl).replace(/\/$/, ''));
        const origin = env.WEBAUTHN_ORIGIN ? new URL(env.WEBAUTHN_ORIGIN).origin : frontend.origin;
        return { rpId: env.WEBAUTHN_RP_ID ?? new URL(origin).hostname, rpName: env.WEBAUTHN_RP_NAME ?? 'Agent Accounts', origin };
      })(),
      /** Unset → mails are written to `outboxDir` instead of being sent. */
      smtpUrl: env.SMTP_URL,
      mailFrom: env.MAIL_FROM ?? `Agent Accounts <no-reply@${new URL(baseUrl).hostname}>`,
      outboxDir: path.resolve(env.DATA_DIR, 'outbox'),
      /** GET /dev/outbox lists the local outbox (development only). */
      devOutbox: env.DEV_OUTBOX === '1',
      trustProxy: env.TRUST_PROXY,
      /** Set: GET /metrics needs it as a bearer token; unset: loopback callers only. */
      metricsToken: env.METRICS_TOKEN,
      /** Set: every request is traced and exported over OTLP/HTTP (common/tracing.ts). */
      otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
      /** The webhook delivery worker (admin/webhooks/worker.ts); `retryDelaysMs` unset: its default schedule. */
      webhooks: {
        allowPrivate: env.WEBHOOK_ALLOW_PRIVATE === '1',
        pollMs: env.WEBHOOK_POLL * 1000,
        timeoutMs: env.WEBHOOK_TIMEOUT * 1000,
        retryDelaysMs: undefined as number[] | undefined,
      },
      logLevel: env.LOG_LEVEL,
      logPretty: env.LOG_PRETTY === '1',
      oauth: oauthConfig(env),
    };
  });

export type AccountConfig = z.output<typeof schema>;

export const loadAccountConfig = (env: NodeJS.ProcessEnv): AccountConfig => parseConfig(schema, env);
