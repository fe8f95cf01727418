/**
 * Per-endpoint rate limits (docs/api.md, "Errors and limits"), counted per client (client-key.ts:
 * an IPv4 address, an IPv6 /64) — and for e-mail sign-in also per address; plus the abuse limits
 * of policy.ts (docs/api.md, "Abuse limits"). Counters live in Redis when REDIS_URL is set, so
 * every instance shares them; otherwise in memory.
 *
 * Redis down: each instance falls back to its own in-memory counters (rate-limiter-flexible's
 * insurance limiter) — limits stay enforced per instance instead of failing open or locking
 * everybody out.
 */
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { AppError } from '../../common/errors.js';
import { clientKey } from './client-key.js';

/** Requests per window (a minute unless WINDOW_SECONDS says otherwise); defaults where configurable. */
export const RATE_LIMITS = {
  'auth.login.email': 5,
  'auth.login.email.address': 5,
  /** Sign-in mails per address per hour, whatever the client: 5 a minute alone is 7,200 a day. */
  'auth.login.email.address.hourly': 10,
  'auth.verify': 10,
  /** Codes tried per address per hour, across all its codes, whatever the client (policy.ts, admitCodeGuess). */
  'auth.verify.code.address.hourly': 10,
  'auth.exchange': 10,
  'auth.wallet.challenge': 10,
  'auth.wallet.verify': 10,
  /** Account self-service (me/router.ts): reads, and changes (unlink, revoke, delete). */
  'account.read': 60,
  'account.change': 20,
  'auth.passkey': 10,
  /** Passkey sign-in (login/verify): its own name, so metrics count it as a sign-in method. */
  'auth.passkey.login': 10,
  'auth.guest': 10,
  /** The second step of a sign-in (POST /auth/mfa/verify), per client. */
  'auth.mfa': 10,
  /** Wrong second-factor codes per account per 15 minutes, whatever the client (auth/mfa/factors.ts). */
  'auth.mfa.account': 5,
  'auth.refresh': 20,
  'auth.oauth': 30,
  /** The browser steps of a connector's sign-in (`/connectors/{id}/authorize`, `/connectors/callback`): each looks a one-time ticket or state up. */
  'connectors.browser': 30,
  'auth.mobile': 10,
  'auth.logout': 20,
  'auth.logout.all': 20,
  /** New guest accounts per client per day (GUEST_SIGNUPS_PER_DAY; policy.ts). */
  'guest.signups.client.daily': 30,
  /** New guest accounts service-wide per hour (GUEST_SIGNUPS_PER_HOUR; policy.ts). */
  'guest.signups.hourly': 2000,
  /** Per guest user, per day (agents/proxy/guest-policy.ts). */
  'guest.chat.daily': 50,
} as const;

export type RateLimitName = keyof typeof RATE_LIMITS;

const QUARTER_HOUR = 15 * 60;
const HOUR = 60 * 60;
const DAY = 24 * HOUR;

/** Limits whose window is not a minute. */
const WINDOW_SECONDS: Partial<Record<RateLimitName, number>> = {
  'auth.login.email.address.hourly': HOUR,
  'auth.verify.code.address.hourly': HOUR,
  'auth.mfa.account': QUARTER_HOUR,
  'guest.signups.client.daily': DAY,
  'guest.signups.hourly': HOUR,
  'guest.chat.daily': DAY,
};

export interface RateLimitOptions {
  /** Unset: counters in this process's memory. */
  redisUrl?: string;
  /** Scales every limit (RATE_LIMIT_MULTIPLIER: load tests and development only). */
  multiplier?: number;
  /** Prefix length an IPv6 client is counted on (IPV6_SUBNET). */
  ipv6Subnet?: number;
  /** Configured values of the configurable limits. */
  limits?: Partial<Record<RateLimitName, number>>;
  prefix?: string;
  /** Told of each refusal (metrics). */
  onRefused?: (name: RateLimitName) => void;
}

export type SetHeader = (name: string, value: string) => void;

export class RateLimits {
  private readonly limiters = new Map<string, RateLimiterAbstract>();
  private readonly redis: Redis | undefined;
  private readonly multiplier: number;
  private readonly ipv6Subnet: number;
  private readonly prefix: string;
  private readonly onRefused: ((name: RateLimitName) => void) | undefined;
  private readonly configured: Partial<Record<RateLimitName, number>>;

  constructor(options: RateLimitOptions = {}) {
    this.multiplier = options.multiplier ?? 1;
    this.ipv6Subnet = options.ipv6Subnet ?? 64;
    this.prefix = options.prefix ?? 'rl';
    this.configured = options.limits ?? {};
    this.onRefused = options.onRefused;
    this.redis = options.redisUrl ? new Redis(options.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false }) : undefined;
    // Connection errors are handled by the insurance limiter; do not crash on them.
    this.redis?.on('error', () => undefined);
  }

  /** The bucket of a client address: the IPv4 address, or the IPv6 prefix (client-key.ts). */
  clientKey(address: string): string {
    return clientKey(address, this.ipv6Subnet);
  }

  limit(name: RateLimitName): number {
    return (this.configured[name] ?? RATE_LIMITS[name]) * this.multiplier;
  }

  /** `points`: a per-user allowance that replaces the limit (an operator's override, admin/users.ts); same counters in Redis. */
  private limiter(name: RateLimitName, points?: number): RateLimiterAbstract {
    const cacheKey = points === undefined ? name : `${name}|${points}`;
    let limiter = this.limiters.get(cacheKey);
    if (!limiter) {
      const options = { points: points ?? this.limit(name), duration: WINDOW_SECONDS[name] ?? 60, keyPrefix: `${this.prefix}:${name}` };
      limiter = this.redis
        ? new RateLimiterRedis({ ...options, storeClient: this.redis, insuranceLimiter: new RateLimiterMemory(options) })
        : new RateLimiterMemory(options);
      this.limiters.set(cacheKey, limiter);
    }
    return limiter;
  }

  /** What is left of `key`'s allowance in the current window, without spending any. */
  async remaining(name: RateLimitName, key: string): Promise<number> {
    const used = await this.limiter(name).get(key);
    return Math.max(0, this.limit(name) - (used?.consumedPoints ?? 0));
  }

  /**
   * Counts one request; over the limit → 429 with Retry-After. Sets RateLimit-* headers either way.
   * `limitOverride`: this key's own limit instead of the configured one (not scaled by RATE_LIMIT_MULTIPLIER).
   */
  async consume(name: RateLimitName, key: string, setHeader?: SetHeader, limitOverride?: number | null): Promise<void> {
    const override = limitOverride ?? undefined;
    const limit = override ?? this.limit(name);
    const headers = (res: RateLimiterRes) => ({
      'RateLimit-Limit': String(limit),
      'RateLimit-Remaining': String(Math.max(0, res.remainingPoints)),
      'RateLimit-Reset': String(Math.ceil(res.msBeforeNext / 1000)),
    });
    try {
      if (limit === 0) throw new RateLimiterRes(0, 24 * 60 * 60 * 1000, 0);
      const res = await this.limiter(name, override).consume(key);
      if (setHeader) for (const [header, value] of Object.entries(headers(res))) setHeader(header, value);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      this.onRefused?.(name);
      const retryAfter = String(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
      throw new AppError(429, 'RATE_LIMITED', `Too many requests; try again in ${retryAfter} s`, { ...headers(rejection), 'Retry-After': retryAfter });
    }
  }

  /** Gives back one point taken by `consume` (a claim that turned out not to be needed). */
  async refund(name: RateLimitName, key: string): Promise<void> {
    await this.limiter(name).reward(key, 1);
  }

  async close(): Promise<void> {
    await this.redis?.quit().catch(() => this.redis?.disconnect());
  }

  /** Resolves when the shared store answers (readiness); at once without Redis. */
  async ping(): Promise<void> {
    await this.redis?.ping();
  }
}
