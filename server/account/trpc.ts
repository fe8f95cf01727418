/**
 * How every account procedure is wired.
 * 1. CONTEXT: the account services and the request (request.ts: id — `requestLog(ctx)` logs
 *    with it —, client IP, the raw Authorization header that procedures accepting a guest upgrade
 *    read, cookies by name for the OAuth callback, `setHeader` for RateLimit-* and Set-Cookie).
 * 2. INITIALISATION: shared with the agent service (server/common/trpc.ts).
 * 3. PROCEDURES: `publicProcedure` for sign-in endpoints (add `.use(rateLimited('auth.x'))`);
 *    `userProcedure` requires the access token of a live session and puts its claims in `ctx.user`
 *    (403 MFA_REQUIRED while the session waits for its second factor: `secondStepProcedure` is the
 *    one that admits it, for the second step itself, auth/mfa/);
 *    `adminProcedure(permission)` requires an admin (role read from the store on every call) or
 *    an API key with that scope, and puts who it is in `ctx.caller` (admin/access.ts).
 */
import type { AdminPermission } from './admin/access.js';
import type { Logger } from '../common/log.js';
import { initServiceTrpc } from '../common/trpc.js';
import type { RateLimitName } from './ratelimit/limits.js';
import type { AccountRequest } from './request.js';
import type { AccountServices } from './services.js';

export interface AccountContext {
  services: AccountServices;
  request: AccountRequest;
}

const t = initServiceTrpc<AccountContext>();

/** A logger bound to the request id, for the rare procedure that logs. */
export const requestLog = (ctx: AccountContext): Logger => ctx.services.log.child({ reqId: ctx.request.id });

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;
export const publicProcedure = t.procedure;
/** The rate-limit bucket of the caller: its address, or its IPv6 prefix (ratelimit/client-key.ts). */
export const clientKeyOf = (ctx: AccountContext): string => ctx.services.rateLimits.clientKey(ctx.request.ip);

/** Counts the call against the named per-client limit before the procedure runs. */
export const rateLimited = (name: RateLimitName) =>
  t.middleware(async ({ ctx, next }) => {
    await ctx.services.rateLimits.consume(name, clientKeyOf(ctx), ctx.request.setHeader);
    const result = await next();
    ctx.services.authMetrics.outcome(name, result.ok ? undefined : (result.error.cause ?? result.error));
    return result;
  });

/** When CAPTCHA_PROVIDER is set, the call needs a passed check in `x-captcha-response` (captcha/siteverify.ts). */
export const captchaChecked = t.middleware(async ({ ctx, next }) => {
  await ctx.services.captcha?.check(ctx.request.header('x-captcha-response'), ctx.request.ip);
  return next();
});

export const userProcedure = t.procedure.use(async ({ ctx, next }) => {
  const user = await ctx.services.tokens.authenticate(ctx.request.authorization, { seen: ctx.request });
  return next({ ctx: { user } }); // tRPC merges it into the context
});

/** `userProcedure` that also admits a session waiting for its second factor (`aal1`): the second step only (auth/mfa/). */
export const secondStepProcedure = t.procedure.use(async ({ ctx, next }) => {
  const user = await ctx.services.tokens.authenticate(ctx.request.authorization, { seen: ctx.request, firstFactorOnly: true });
  return next({ ctx: { user } });
});

export const adminProcedure = (permission: AdminPermission) =>
  t.procedure.use(async ({ ctx, next }) => {
    const caller = await ctx.services.adminAccess.authorize(ctx.request, permission);
    return next({ ctx: { caller } });
  });
