/**
 * The agents' settings (AGENT_*, KUBE_*, MODEL_* and the keys the egress gateway adds), spread
 * into the account service's config schema (server/account/config.ts) as captcha/config.ts and
 * auth/oauth/config.ts are: where agents run and how (provisioners), their sandbox, their egress
 * and model budgets, the proxy's per-user slots. `agentsConfig` turns them into the fields of
 * `AccountConfig` that assemble.ts and the agents' rooms read.
 */
import os from 'node:os';
import { z } from 'zod';
import { parseModelSpec } from '@contracts/agent/model-spec.js';
import { httpUrl, optionalString, port } from '../../common/config.js';
import { parseSearchSetting } from './egress/web-search.js';

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

/**
 * AGENT_WARM_POOL's default: two pre-started agents, fewer when the memory free right now holds
 * fewer agents at their limit (AGENT_MEMORY_MB); a pool must never be what pushes a host into swap.
 */
export const defaultWarmPool = (memoryMb: number, freeBytes = os.freemem()): number => Math.max(0, Math.min(2, Math.floor(freeBytes / (memoryMb * 1024 ** 2))));

export const agentsEnv = {
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
  AGENT_WAKE_POLL: z
    .preprocess((v) => (v === '' || v === undefined ? 5 : v), z.coerce.number().min(0.05).max(3600))
    .describe(
      "seconds between the wake scheduler's rounds: sleeping agents whose next heartbeat or scheduled task is due are started (one instance at a time per agent), so a task starts within this of its time; failed wakes are retried with backoff",
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
  // Scheduled tasks (the agents enforce them: server/agent/tasks/), per account tier.
  TASKS_MAX: intSetting(50, { min: 0, max: 10_000 }).describe("scheduled tasks a full account's agent may hold (403 `TASK_LIMIT` past it)"),
  TASKS_MAX_GUEST: intSetting(3, { min: 0, max: 10_000 }).describe("the same for a guest's agent"),
  TASK_MIN_INTERVAL: intSetting(300, { min: 60, max: 86_400 * 7 }).describe(
    "seconds a full account's recurring task must leave between two runs (a closer cron is 400 `INVALID_SCHEDULE`)",
  ),
  TASK_MIN_INTERVAL_GUEST: intSetting(3600, { min: 60, max: 86_400 * 7 }).describe("the same for a guest's recurring task"),
  // What the egress gateway forwards model and Telegram calls to, and the keys it adds.
  MODEL: optionalString.meta({
    description: "the local agents' model, same syntax as the agent's `MODEL`; agents get it without any key",
    default: 'unset → agents answer that no model is configured',
    values: '`openai-compatible:<base_url>#<model>`, `openai:<model>`, `anthropic:<model>`',
  }),
  HEARTBEAT_MODEL: optionalString.meta({
    description:
      "the model the local agents' heartbeats run on (a cheaper one), same syntax as `MODEL`; its host joins the egress allowlist with the same keys",
    default: 'unset → `MODEL`',
    values: 'as `MODEL`',
  }),
  TASK_MODEL: optionalString.meta({
    description:
      "the model the local agents' scheduled tasks run on (a cheaper one), same syntax as `MODEL`; its host joins the egress allowlist with the same keys",
    default: 'unset → `MODEL`',
    values: 'as `MODEL`',
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
  // The agents' web tools (agents/egress/web.ts): what the gateway fetches and searches for them.
  AGENT_WEB: z
    .preprocess((v) => (v === '' || v === undefined ? 'on' : v), z.enum(['on', 'off']))
    .describe('`off`: agents are offered neither `web_fetch` nor `web_search`, and the gateway refuses both ([security](security.md#the-web-tools))'),
  WEB_SEARCH: optionalString.meta({
    description:
      'the search provider `web_search` uses; the gateway adds its key (`BRAVE_API_KEY`, `TAVILY_API_KEY`), agents never see it. A URL after `brave:` or `tavily:` replaces their API root (a proxy)',
    default: 'unset → agents are not offered `web_search`',
    values: '`searxng:<url>` (its JSON API), `brave`, `tavily`',
  }),
  BRAVE_API_KEY: optionalString.describe('the Brave Search API key for `WEB_SEARCH=brave`; added by the egress gateway'),
  TAVILY_API_KEY: optionalString.describe('the Tavily API key for `WEB_SEARCH=tavily`; added by the egress gateway'),
  AGENT_WEB_ALLOW_DOMAINS: optionalString.meta({
    description: '`web_fetch` goes only to these domains and their subdomains (redirects included)',
    default: 'unset → any domain on a public address',
    values: 'comma-separated domains',
  }),
  AGENT_WEB_DENY_DOMAINS: optionalString.meta({
    description: '`web_fetch` never goes to these domains or their subdomains (redirects included); wins over the allow list',
    values: 'comma-separated domains',
  }),
  AGENT_WEB_DAILY_FETCHES: intSetting(200, { min: 0, max: 1_000_000 }).describe(
    "pages a full account's agent may fetch per UTC day (429 `WEB_DAILY_LIMIT` past it); `0`: no ceiling",
  ),
  AGENT_WEB_DAILY_FETCHES_GUEST: intSetting(20, { min: 0, max: 1_000_000 }).describe("the same for a guest's agent"),
  AGENT_WEB_DAILY_SEARCHES: intSetting(100, { min: 0, max: 1_000_000 }).describe("searches a full account's agent may make per UTC day; `0`: no ceiling"),
  AGENT_WEB_DAILY_SEARCHES_GUEST: intSetting(10, { min: 0, max: 1_000_000 }).describe("the same for a guest's agent"),
  AGENT_WEB_TIMEOUT: z
    .preprocess((v) => (v === '' || v === undefined ? 20 : v), z.coerce.number().min(0.1).max(600))
    .describe('seconds a web fetch (redirects and body included) or a search may take; a page still arriving then is cut'),
  AGENT_WEB_MAX_REDIRECTS: intSetting(5, { min: 0, max: 20 }).describe('redirects a web fetch follows, each checked as the first URL'),
  AGENT_WEB_TEST_PUBLIC: optionalString.meta({
    description:
      "`address:port` pairs the web tools treat as public although they are not. Tests and development on one machine only: never on a deployment (refused with `NODE_ENV=production`; cloud-metadata addresses and this service's own ports stay refused)",
    internal: true,
    values: 'comma-separated `127.0.0.1:8080`, `[::1]:8080`',
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
};

type AgentsEnv = z.output<z.ZodObject<typeof agentsEnv>>;

/** Config errors of the agents' settings, as [variable, message]. */
export function agentsProblems(env: AgentsEnv): Array<[keyof AgentsEnv, string]> {
  const problems: Array<[keyof AgentsEnv, string]> = [];
  if (env.WEB_SEARCH) {
    try {
      const provider = parseSearchSetting(env.WEB_SEARCH);
      if (provider.kind === 'brave' && !env.BRAVE_API_KEY) problems.push(['BRAVE_API_KEY', 'is required with WEB_SEARCH=brave']);
      if (provider.kind === 'tavily' && !env.TAVILY_API_KEY) problems.push(['TAVILY_API_KEY', 'is required with WEB_SEARCH=tavily']);
    } catch (error) {
      problems.push(['WEB_SEARCH', (error as Error).message]);
    }
  }
  for (const name of ['MODEL', 'HEARTBEAT_MODEL', 'TASK_MODEL'] as const) {
    const spec = env[name];
    if (!spec) continue;
    try {
      parseModelSpec(spec);
    } catch (error) {
      problems.push([name, (error as Error).message]);
    }
  }
  return problems;
}

const listSetting = (value: string | undefined) =>
  (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
/** Domains as the web policy compares them: lower case, no trailing dot. */
const domainList = (value: string | undefined) => listSetting(value).map((domain) => domain.toLowerCase().replace(/\.+$/, ''));

/** The agents' part of the account's configuration. */
export type AgentsConfig = ReturnType<typeof agentsConfig>;

export function agentsConfig(env: AgentsEnv) {
  return {
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
    /** Scheduled-task limits per tier, handed to each agent (TASKS_MAX, TASK_MIN_INTERVAL in seconds). */
    taskLimits: {
      account: { max: env.TASKS_MAX, minIntervalSeconds: env.TASK_MIN_INTERVAL },
      guest: { max: env.TASKS_MAX_GUEST, minIntervalSeconds: env.TASK_MIN_INTERVAL_GUEST },
    },
    /** Tokens per UTC day; 0: no ceiling (agents/egress/model-usage.ts). */
    modelBudget: { account: env.MODEL_DAILY_TOKENS, guest: env.MODEL_DAILY_TOKENS_GUEST, guestsTotal: env.MODEL_DAILY_TOKENS_GUESTS_TOTAL },
    /** The output ceiling the gateway sets on model calls that name none (agents/egress/model-usage.ts). */
    modelCallMaxTokens: env.MODEL_CALL_MAX_TOKENS,
    egress: {
      model: env.MODEL,
      heartbeatModel: env.HEARTBEAT_MODEL,
      taskModel: env.TASK_MODEL,
      modelApiKey: env.MODEL_API_KEY,
      openaiApiKey: env.OPENAI_API_KEY,
      openaiBaseUrl: env.OPENAI_BASE_URL,
      anthropicApiKey: env.ANTHROPIC_API_KEY,
      anthropicBaseUrl: env.ANTHROPIC_BASE_URL,
      telegramApiRoot: env.TELEGRAM_API_ROOT ?? 'https://api.telegram.org',
      allow: listSetting(env.AGENT_EGRESS_ALLOW),
    },
    /** The agents' web tools (agents/egress/web.ts, web-ledger.ts). */
    web: {
      policy: {
        enabled: env.AGENT_WEB === 'on',
        allowDomains: domainList(env.AGENT_WEB_ALLOW_DOMAINS),
        denyDomains: domainList(env.AGENT_WEB_DENY_DOMAINS),
        search: env.WEB_SEARCH ? parseSearchSetting(env.WEB_SEARCH) : undefined,
        timeoutMs: env.AGENT_WEB_TIMEOUT * 1000,
        maxRedirects: env.AGENT_WEB_MAX_REDIRECTS,
        testPublic: listSetting(env.AGENT_WEB_TEST_PUBLIC),
      },
      keys: { brave: env.BRAVE_API_KEY, tavily: env.TAVILY_API_KEY },
      daily: {
        account: { fetch: env.AGENT_WEB_DAILY_FETCHES, search: env.AGENT_WEB_DAILY_SEARCHES },
        guest: { fetch: env.AGENT_WEB_DAILY_FETCHES_GUEST, search: env.AGENT_WEB_DAILY_SEARCHES_GUEST },
      },
    },
    /** Bounds on each agent's tunnels and requests through its gateway (agents/egress/gateway.ts). */
    egressLimits: {
      maxConnections: env.AGENT_EGRESS_MAX_CONNECTIONS,
      idleTimeoutMs: env.AGENT_EGRESS_IDLE_TIMEOUT * 1000,
      maxDurationMs: env.AGENT_EGRESS_MAX_DURATION * 1000,
      maxBodyBytes: env.AGENT_EGRESS_MAX_BODY_MB * 1024 * 1024,
    },
  };
}
