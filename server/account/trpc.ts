/**
 * How every account procedure is wired.
 * 1. CONTEXT: the account services, the request id (`requestLog(ctx)` logs with it), client IP, the raw
 *    Authorization header (procedures that accept a guest upgrade read it), and the request's
 *    cookies by name (the OAuth callback reads its browser-binding cookie; set cookies with
 *    `setHeader('Set-Cookie', …)`).
 * 2. INITIALISATION: shared with the agent service (server/common/trpc.ts).
 * 3. PROCEDURES: `publicProcedure` for sign-in endpoints (add `.use(rateLimited('auth.x'))`);
 *    `userProcedure` requires the access token of a live session and puts its claims in `ctx.user`.
 */
import type { Logger } from '../common/log.js';
import { initServiceTrpc } from '../common/trpc.js';
import type { RateLimitName, SetHeader } from './ratelimit/limits.js';
import type { AccountServices } from './services.js';

export interface AccountContext {
  services: AccountServices;
  /** Plain data, not a logger: a per-request child logger is made only when something logs. */
  requestId: string;
  ip: string;
  authorization: string | undefined;
  /** The request's cookies by name (the OAuth callback reads its browser-binding cookie). */
  cookies: Record<string, string>;
  /** Response headers from inside a procedure (RateLimit-*), over REST and tRPC alike. */
  setHeader: SetHeader;
}

const t = initServiceTrpc<AccountContext>();

/** A logger bound to the request id, for the rare procedure that logs. */
export const requestLog = (ctx: AccountContext): Logger => ctx.services.log.child({ reqId: ctx.requestId });

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;
export const publicProcedure = t.procedure;
/** Counts the call against the named per-IP limit before the procedure runs. */
export const rateLimited = (name: RateLimitName) =>
  t.middleware(async ({ ctx, next }) => {
    await ctx.services.rateLimits.consume(name, ctx.ip, ctx.setHeader);
    return next();
  });

export const userProcedure = t.procedure.use(async ({ ctx, next }) => {
  const user = await ctx.services.tokens.authenticate(ctx.authorization);
  return next({ ctx: { user } }); // tRPC merges it into the context
});
