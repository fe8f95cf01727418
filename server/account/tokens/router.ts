import { z } from 'zod';
import { publicProcedure, rateLimited, router, userProcedure } from '../trpc.js';
import { Me, RefreshTokenInput, TokenPair } from '@contracts/account/tokens.js';

export const tokensRouter = router({
  refresh: publicProcedure
    .use(rateLimited('auth.refresh'))
    .meta({
      openapi: { method: 'POST', path: '/auth/refresh', protect: false, summary: 'Rotate a refresh token into a new pair' },
      errors: ['INVALID_TOKEN', 'TOKEN_EXPIRED', 'INVALID_REFRESH_TOKEN', 'REFRESH_TOKEN_REUSED', 'SESSION_REVOKED', 'RATE_LIMITED'],
    })
    .input(RefreshTokenInput)
    .output(TokenPair)
    .mutation(({ ctx, input }) => ctx.services.tokens.refresh(input.refresh_token)),

  logout: publicProcedure
    .use(rateLimited('auth.logout'))
    .meta({ openapi: { method: 'POST', path: '/auth/logout', protect: false, summary: 'End one session (204)' }, rest: { kind: 'empty' } })
    .input(RefreshTokenInput)
    .output(z.void())
    .mutation(({ ctx, input }) => ctx.services.tokens.logout(input.refresh_token)),

  logoutAll: userProcedure
    .use(rateLimited('auth.logout.all'))
    .meta({ openapi: { method: 'POST', path: '/auth/logout/all', summary: 'End every session of the user (204)' }, rest: { kind: 'empty' } })
    .input(z.void())
    .output(z.void())
    .mutation(({ ctx }) => ctx.services.tokens.logoutAll(ctx.user.userId, ctx.request.client)),

  /** Who the access token belongs to (not in the spec; the web client and the benches use it). */
  me: userProcedure
    .meta({ openapi: { method: 'GET', path: '/auth/me', summary: 'The signed-in user of this access token' } })
    .output(Me)
    .query(({ ctx }) => ({ user_id: ctx.user.userId, session_id: ctx.user.sessionId, guest: ctx.user.guest })),
});
