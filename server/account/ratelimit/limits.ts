/**
 * Per-endpoint rate limits (spec: "Limits"; design.md: "Rate limits"), counted per client IP —
 * and for e-mail sign-in also per address. Counters live in Redis when REDIS_URL is set, so
 * every instance shares them; otherwise in memory.
 *
 * Redis down: each instance falls back to its own in-memory counters (rate-limiter-flexible's
 * insurance limiter) — limits stay enforced per instance instead of failing open or locking
 * everybody out.
 */
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { AppError } from '../../common/errors.js';

/** Requests per window (a minute unless WINDOW_SECONDS says otherwise). */
export const RATE_LIMITS = {
  'auth.login.email': 5,
  'auth.login.email.address': 5,
  'auth.verify': 10,
  'auth.exchange': 10,
  'auth.wallet.challenge': 10,
  'auth.wallet.verify': 10,
  /** Account self-service (users/router.ts): reads, and changes (unlink, revoke, delete). */
  'account.read': 60,
  'account.change': 20,
  'auth.passkey': 10,
  'auth.guest': 10,
  'auth.refresh': 20,
  'auth.oauth': 30,
  'auth.mobile': 10,
  'auth.logout': 20,
  'auth.logout.all': 20,
  /** Per guest user, per day (agents/guest-policy.ts). */
  'guest.chat.daily': 50,
} as const;

/** Limits whose window is not a minute. */
const WINDOW_SECONDS: Partial<Record<keyof typeof RATE_LIMITS, number>> = { 'guest.chat.daily': 24 * 60 * 60 };

export type RateLimitName = keyof typeof RATE_LIMITS;

export type SetHeader = (name: string, value: string) => void;

export class RateLimits {
  private readonly limiters = new Map<RateLimitName, RateLimiterAbstract>();
  private readonly redis: Redis | undefined;

  /** `multiplier` scales every limit (RATE_LIMIT_MULTIPLIER: load tests and development only). */
  constructor(redisUrl?: string, private readonly multiplier = 1, private readonly prefix = 'rl') {
    this.redis = redisUrl ? new Redis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false }) : undefined;
    // Connection errors are handled by the insurance limiter; do not crash on them.
    this.redis?.on('error', () => undefined);
  }

  private limiter(name: RateLimitName): RateLimiterAbstract {
    let limiter = this.limiters.get(name);
    if (!limiter) {
      const options = { points: RATE_LIMITS[name] * this.multiplier, duration: WINDOW_SECONDS[name] ?? 60, keyPrefix: `${this.prefix}:${name}` };
      limiter = this.redis
        ? new RateLimiterRedis({ ...options, storeClient: this.redis, insuranceLimiter: new RateLimiterMemory(options) })
        : new RateLimiterMemory(options);
      this.limiters.set(name, limiter);
    }
    return limiter;
  }

  /** Counts one request; over the limit → 429 with Retry-After. Sets RateLimit-* headers either way. */
  async consume(name: RateLimitName, key: string, setHeader?: SetHeader): Promise<void> {
    const limit = RATE_LIMITS[name] * this.multiplier;
    const headers = (res: RateLimiterRes) => ({
      'RateLimit-Limit': String(limit),
      'RateLimit-Remaining': String(Math.max(0, res.remainingPoints)),
      'RateLimit-Reset': String(Math.ceil(res.msBeforeNext / 1000)),
    });
    try {
      const res = await this.limiter(name).consume(key);
      if (setHeader) for (const [header, value] of Object.entries(headers(res))) setHeader(header, value);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const retryAfter = String(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
      throw new AppError(429, 'RATE_LIMITED', `Too many requests; try again in ${retryAfter} s`, { ...headers(rejection), 'Retry-After': retryAfter });
    }
  }

  async close(): Promise<void> {
    await this.redis?.quit().catch(() => this.redis?.disconnect());
  }

  /** Resolves when the shared store answers (readiness); at once without Redis. */
  async ping(): Promise<void> {
    await this.redis?.ping();
  }
}
