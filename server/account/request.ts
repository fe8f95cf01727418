/**
 * What an account procedure may know about the HTTP request it serves, over REST and tRPC alike:
 * the request id, the Authorization header and other headers, the client address, cookies, a way to set
 * response headers (RateLimit-*, Set-Cookie), and a way to run work after the answer.
 *
 * It sits in the tRPC context as one object because tRPC copies the context at every middleware:
 * one reference is cheap to copy, and the parts few procedures need (the client address behind
 * `trust proxy`, the parsed cookies) are worked out only when asked.
 */
import type { Request } from 'express';
import { parseCookies } from './auth/oauth/cookies.js';
import { boundedUserAgent, type ClientInfo } from './events/activity.js';

export class AccountRequest {
  private parsedCookies: Record<string, string> | undefined;
  private clientIp: string | undefined;

  constructor(private readonly req: Request) {}

  get id(): string {
    return this.req.id;
  }

  get authorization(): string | undefined {
    return this.req.headers.authorization;
  }

  /** The client's address (`X-Forwarded-For` only from proxies in TRUST_PROXY). */
  get ip(): string {
    this.clientIp ??= this.req.ip ?? this.req.socket.remoteAddress ?? 'unknown';
    return this.clientIp;
  }

  /** A request header, its first value when repeated. */
  header(name: string): string | undefined {
    const value = this.req.headers[name.toLowerCase()];
    return Array.isArray(value) ? value[0] : value;
  }

  cookie(name: string): string | undefined {
    this.parsedCookies ??= parseCookies(this.req.headers.cookie);
    return this.parsedCookies[name];
  }

  /** Address and user agent, for the session list and the activity log. */
  get client(): ClientInfo {
    return { ip: this.ip, userAgent: boundedUserAgent(this.req.headers['user-agent']) };
  }

  /**
   * Runs `work` once the answer has been handed to the socket ('finish'): for what the caller
   * need not wait for (a signed-in user's agent warming up), so it costs the answer nothing. Not
   * at all when the client left before its answer; on the next turn of the event loop when no
   * answer is pending (already sent, or a call without one).
   */
  afterAnswer(work: () => void): void {
    const res = this.req.res;
    if (res && !res.writableFinished && !res.destroyed) res.once('finish', work);
    else setImmediate(work);
  }

  /** Bound, so it can be handed on (the rate limiter sets RateLimit-* with it). */
  readonly setHeader = (name: string, value: string | string[]): void => {
    const res = this.req.res;
    if (res && !res.headersSent) res.setHeader(name, value);
  };
}
