/**
 * Browser OAuth with provider A (OpenID Connect) and provider B (OAuth 2), and the one-time
 * code exchange (in the browser the callback answered: its exchange cookie). REST: GET /auth/oauth/{idpa,idpb}[/callback]
 * (302s), POST /auth/exchange.
 * tRPC only: `authorizationUrl`, the start for a signed-in user (the Authorization header binds
 * the account — a guest to upgrade or a full account linking — to the state; the client then navigates to the returned URL).
 */
import { z } from 'zod';
import { AppError } from '../../../common/errors.js';
import { TokenPair } from '@contracts/account/tokens.js';
import { clientKeyOf, publicProcedure, rateLimited, requestLog, router, type AccountContext } from '../../trpc.js';
import { openSession, signInCall, signInTarget } from '../sign-in.js';
import { exchangeAuthCode } from './codes.js';
import { bindingCookie, bindingCookieName, clearedBindingCookie, clearedExchangeCookie, EXCHANGE_COOKIE, exchangeCookie } from './cookies.js';
import { failureLanding, finishAuthorization, startAuthorization, type FlowDeps } from './flow.js';
import type { OAuthProvider } from './providers.js';
import { AuthorizationUrlInput, CallbackQuery, ExchangeInput, Redirect } from './schemas.js';

const deps = (ctx: AccountContext): FlowDeps => ({
  db: ctx.services.store.db,
  client: ctx.request.client,
  providers: ctx.services.oauth,
  frontendUrl: ctx.services.config.frontendUrl,
  log: requestLog(ctx),
});

/**
 * A browser that navigated here (it accepts HTML) and cannot start lands on the web client's
 * callback page with the reason, like every failed callback, never on a JSON body; API clients
 * get the error as JSON.
 */
async function start(ctx: AccountContext, provider: OAuthProvider) {
  try {
    const target = await signInTarget(signInCall(ctx));
    const { location, browserSecret } = await startAuthorization(deps(ctx), { provider, linkUserId: target?.userId, now: new Date() });
    ctx.request.setHeader('Cache-Control', 'no-store');
    ctx.request.setHeader('Set-Cookie', bindingCookie(provider, browserSecret, ctx.services.config.baseUrl));
    return { location };
  } catch (error) {
    if (!ctx.request.header('accept')?.includes('text/html')) throw error;
    requestLog(ctx).warn({ provider, reason: error instanceof Error ? error.message : String(error) }, 'oauth start refused');
    ctx.request.setHeader('Cache-Control', 'no-store');
    return { location: failureLanding(ctx.services.config.frontendUrl, error) };
  }
}

const NAMES = { idpa: 'provider A', idpb: 'provider B' } as const;

function providerRoutes(provider: OAuthProvider) {
  return router({
    start: publicProcedure
      .use(rateLimited('auth.oauth'))
      .meta({
        openapi: { method: 'GET', path: `/auth/oauth/${provider}`, protect: false, summary: `Redirect to ${NAMES[provider]}'s authorization screen` },
        rest: { kind: 'redirect' },
      })
      .input(z.void())
      .output(Redirect)
      .query(({ ctx }) => start(ctx, provider)),

    /** Always a redirect to {FRONTEND_URL}/auth/callback with `code` or `error`, even when rate limited. */
    callback: publicProcedure
      .meta({
        openapi: {
          method: 'GET',
          path: `/auth/oauth/${provider}/callback`,
          protect: false,
          summary: `${NAMES[provider]} returns here; redirects to the web client with a one-time code`,
        },
        rest: { kind: 'redirect' },
      })
      .input(CallbackQuery)
      .output(Redirect)
      .query(async ({ ctx, input }) => {
        ctx.request.setHeader('Cache-Control', 'no-store');
        const { baseUrl } = ctx.services.config;
        ctx.request.setHeader('Set-Cookie', clearedBindingCookie(provider, baseUrl));
        const params = Object.fromEntries(Object.entries(input).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
        try {
          await ctx.services.rateLimits.consume('auth.oauth', clientKeyOf(ctx), ctx.request.setHeader);
        } catch (error) {
          const code = error instanceof AppError && error.status === 429 ? 'rate_limited' : 'server_error';
          if (code === 'server_error') requestLog(ctx).error({ err: error }, 'rate limiter failed');
          return { location: `${ctx.services.config.frontendUrl}/auth/callback?error=${code}` };
        }
        const authCodeTtlSeconds = ctx.services.config.oauth.authCodeTtlSeconds;
        const { location, exchangeSecret } = await finishAuthorization(deps(ctx), {
          provider,
          params,
          browserSecret: ctx.request.cookie(bindingCookieName(provider)),
          now: new Date(),
          authCodeTtlSeconds,
        });
        if (exchangeSecret) {
          ctx.request.setHeader('Set-Cookie', [clearedBindingCookie(provider, baseUrl), exchangeCookie(exchangeSecret, baseUrl, authCodeTtlSeconds)]);
        }
        return { location };
      }),
  });
}

export const oauthRouter = router({
  idpa: providerRoutes('idpa'),
  idpb: providerRoutes('idpb'),

  authorizationUrl: publicProcedure
    .use(rateLimited('auth.oauth'))
    .input(AuthorizationUrlInput)
    .output(Redirect)
    .mutation(({ ctx, input }) => start(ctx, input.provider)),

  exchange: publicProcedure
    .use(rateLimited('auth.exchange'))
    .meta({
      openapi: { method: 'POST', path: '/auth/exchange', protect: false, summary: 'Trade the one-time auth code of an OAuth callback for a token pair' },
      errors: ['INVALID_AUTH_CODE', 'RATE_LIMITED'],
    })
    .input(ExchangeInput)
    .output(TokenPair)
    .mutation(async ({ ctx, input }) => {
      const user = await exchangeAuthCode(ctx.services.store.db, { code: input.code, browserSecret: ctx.request.cookie(EXCHANGE_COOKIE), now: new Date() });
      ctx.request.setHeader('Set-Cookie', clearedExchangeCookie(ctx.services.config.baseUrl));
      return openSession(signInCall(ctx), user, user.method);
    }),
});
