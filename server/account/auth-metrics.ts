/**
 * What the account service counts about sign-in, beyond HTTP requests (GET /metrics): sign-ins by
 * method and result, refreshes by result, and rate-limit refusals by limit. Every rate-limited
 * procedure reports here (trpc.ts), so REST and tRPC calls count alike. Labels are bounded sets:
 * a method, our own error codes, a limit name; never a user, address or token.
 */
import { Counter, type Registry } from 'prom-client';
import { AppError } from '../common/errors.js';
import type { RateLimitName } from './ratelimit/limits.js';

/** The sign-in method an endpoint completes (its rate limit names it). */
const SIGN_IN_METHOD: Partial<Record<RateLimitName, string>> = {
  'auth.verify': 'email',
  'auth.exchange': 'oauth',
  'auth.mobile': 'idpa_native',
  'auth.wallet.verify': 'wallet',
  'auth.passkey.login': 'passkey',
  'auth.guest': 'guest',
};

/** Refresh answers by what happened to the token. */
const REFRESH_RESULT: Record<string, string> = {
  REFRESH_TOKEN_REUSED: 'reuse_detected',
  TOKEN_EXPIRED: 'expired',
  INVALID_REFRESH_TOKEN: 'invalid',
  INVALID_TOKEN: 'invalid',
};

export class AuthMetrics {
  private readonly signIns: Counter<'method' | 'result'>;
  private readonly refreshes: Counter<'result'>;
  private readonly refusals: Counter<'limit'>;

  constructor(registry: Registry) {
    this.signIns = new Counter({
      name: 'sign_ins_total',
      help: 'Sign-in attempts by method and result (ok or the error code)',
      labelNames: ['method', 'result'],
      registers: [registry],
    });
    this.refreshes = new Counter({ name: 'token_refreshes_total', help: 'Refresh token rotations by result', labelNames: ['result'], registers: [registry] });
    this.refusals = new Counter({
      name: 'rate_limit_refusals_total',
      help: 'Requests refused by a rate limit, by limit',
      labelNames: ['limit'],
      registers: [registry],
    });
  }

  /** A rate-limited call ended: `error` is what it threw, if anything. */
  outcome(limit: RateLimitName, error: unknown): void {
    const code = error === undefined ? undefined : error instanceof AppError ? error.appCode : 'INTERNAL';
    if (limit === 'auth.refresh') {
      this.refreshes.inc({ result: code === undefined ? 'rotated' : (REFRESH_RESULT[code] ?? 'failed') });
      return;
    }
    const method = SIGN_IN_METHOD[limit];
    if (method) this.signIns.inc({ method, result: code === undefined ? 'ok' : code });
  }

  refused(limit: string): void {
    this.refusals.inc({ limit });
  }
}
