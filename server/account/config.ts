/**
 * The account service's configuration: one zod schema of its environment, which takes in the
 * settings of its areas kept beside them (auth/oauth/config.ts, captcha/config.ts, and the agents'
 * agents/config.ts), checked together and turned into the `AccountConfig` every part reads.
 */
import { isIP } from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { httpUrl, logLevel, logPretty, optionalString, otlpEndpoint, parseConfig, port, requestBodyTimeout, uploadIdleTimeout } from '../common/config.js';
import { oauthConfig, oauthEnv } from './auth/oauth/config.js';
import { captchaConfig, captchaEnv, captchaProblems } from './captcha/config.js';
import { agentsConfig, agentsEnv, agentsProblems } from './agents/config.js';
import { connectorsConfig, connectorsEnv, connectorsProblems } from './connectors/config.js';

const count = (fallback: number, min: number, max: number) =>
  z.preprocess((v) => (v === '' || v === undefined ? fallback : v), z.coerce.number().int().min(min).max(max));

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
  // The agents' own settings (AGENT_*, KUBE_*, MODEL_*, …): agents/config.ts.
  ...agentsEnv,
  // Slow request bodies (server/common/http.ts, BodyTimeouts), here and on the local agents.
  REQUEST_BODY_TIMEOUT: requestBodyTimeout,
  UPLOAD_IDLE_TIMEOUT_SECONDS: uploadIdleTimeout,
  TELEGRAM_WEBHOOK_BASE: optionalString.pipe(httpUrl.optional()).meta({
    description:
      "the account's public base URL (https in production): users' bots are connected in webhook mode at `{base}/api/v1/telegram/{opaque id}/webhook`, so their agents may sleep",
    default: "unset → users' bots long-poll from their agents",
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
  NODE_ENV: optionalString.describe('`production` refuses development- and test-only settings (`DEV_OUTBOX`, `AGENT_WEB_TEST_PUBLIC`)'),
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
  ADMIN_REQUIRE_2FA: z
    .preprocess((v) => (v === '' || v === undefined ? '1' : v), z.enum(['0', '1']))
    .describe(
      "`1`: the admin role works only in sessions that passed a second factor (`aal2`: an authenticator app's code, a recovery code, or a passkey with user verification); an admin's other sessions get 403 `MFA_REQUIRED` on admin routes and can still enrol one on the Account page. API keys are not affected. `0`: any session of an admin ([security](security.md#a-second-factor))",
    ),
  TOKEN_METADATA_CLAIM: optionalString
    .pipe(
      z
        .string()
        .regex(/^[a-z][a-z0-9_]{0,31}$/, 'must be a lowercase claim name')
        .refine((name) => !['iss', 'aud', 'sub', 'sid', 'jti', 'typ', 'iat', 'exp', 'nbf', 'guest', 'gen', 'aal'].includes(name), 'names a registered claim')
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
  ...connectorsEnv,
});

const schema = accountEnv
  .superRefine((env, ctx) => {
    // The outbox page shows every sign-in link and code: never where real people sign in.
    if (env.DEV_OUTBOX === '1' && env.NODE_ENV === 'production')
      ctx.addIssue({ code: 'custom', path: ['DEV_OUTBOX'], message: 'is not allowed when NODE_ENV=production' });
    // It lets the agents' web tools reach addresses that are not public, this machine's loopback included.
    if (env.AGENT_WEB_TEST_PUBLIC && env.NODE_ENV === 'production')
      ctx.addIssue({ code: 'custom', path: ['AGENT_WEB_TEST_PUBLIC'], message: 'is for tests only: not allowed when NODE_ENV=production' });
    if (env.DEV_OUTBOX === '1' && env.SMTP_URL)
      ctx.addIssue({ code: 'custom', path: ['DEV_OUTBOX'], message: 'lists the local outbox, which is not used when SMTP_URL is set' });
    for (const [name, message] of [...captchaProblems(env), ...agentsProblems(env), ...connectorsProblems(env)])
      ctx.addIssue({ code: 'custom', path: [name], message });
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
      /** The admin role needs an `aal2` session (admin/access.ts). */
      adminRequire2fa: env.ADMIN_REQUIRE_2FA === '1',
      /** New guests per client per day and service-wide per hour (ratelimit/policy.ts). */
      guestSignupsPerDay: env.GUEST_SIGNUPS_PER_DAY,
      guestSignupsPerHour: env.GUEST_SIGNUPS_PER_HOUR,
      walletAccounts: env.WALLET_ACCOUNTS,
      /** Unset: no CAPTCHA (captcha/). */
      captcha: captchaConfig(env),
      /** Users' own MCP servers (connectors/). */
      connectors: connectorsConfig(env),
      /** How long a request body may take; uploads must progress instead (common/http.ts, BodyTimeouts); local agents get the same. */
      bodyTimeouts: { requestSeconds: env.REQUEST_BODY_TIMEOUT, uploadIdleSeconds: env.UPLOAD_IDLE_TIMEOUT_SECONDS },
      ...agentsConfig(env),
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
