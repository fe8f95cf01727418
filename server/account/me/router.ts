/** Account self-service: who am I, sessions, linked methods, second factors, activity (users/account.ts, tokens/sessions.ts, auth/mfa/). */
import { z } from 'zod';
import { notFound } from '../../common/errors.js';
import { listSessions, revokeOwnSession } from '../tokens/sessions.js';
import { rateLimited, requestLog, router, userProcedure, type AccountContext } from '../trpc.js';
import { zoneChanged } from '../agents/user-zone.js';
import type { AccessClaims } from '../tokens/jwt.js';
import { listActivity, USER_ACTIVITY_WINDOWS } from '../events/activity.js';
import { getAccount, setTimezone, unlinkIdentity, utc } from '../users/account.js';
import { deleteAccount } from '../users/delete.js';
import { renamePasskey } from '../auth/passkey/service.js';
import { RenamePasskeyInput } from '../auth/passkey/schemas.js';
import { mfaAccountRouter } from '../auth/mfa/router.js';
import { Account, Activity, IdInput, Sessions, TimezoneInput } from './schemas.js';

/** The account as `GET /account` shows it: methods, and what is left of today's allowances. */
async function accountView(ctx: AccountContext & { user: AccessClaims }) {
  const { userId, guest } = ctx.user;
  const [account, messagesLeft, modelTokens] = await Promise.all([
    getAccount(ctx.services.store.db, userId),
    guest ? ctx.services.rateLimits.remaining('guest.chat.daily', userId) : null,
    ctx.services.modelBudget.status(userId),
  ]);
  const perDay = guest ? ctx.services.rateLimits.limit('guest.chat.daily') : null;
  return { ...account, usage: { messages_left_today: messagesLeft, messages_per_day: perDay, model_tokens: modelTokens } };
}

const reading = userProcedure.use(rateLimited('account.read'));
const changing = userProcedure.use(rateLimited('account.change'));

export const accountRouter = router({
  get: reading
    .meta({
      openapi: { method: 'GET', path: '/account', summary: 'The signed-in account and every sign-in method linked to it' },
      errors: ['ACCOUNT_NOT_FOUND'],
    })
    .input(z.void())
    .output(Account)
    .query(({ ctx }) => accountView(ctx)),

  setTimezone: changing
    .meta({
      openapi: { method: 'PUT', path: '/account/timezone', summary: "Keep the user's time zone (204): the web client sends the browser's" },
      rest: { kind: 'empty' },
    })
    .input(TimezoneInput)
    .output(z.void())
    .mutation(async ({ ctx, input }) => {
      // A running agent is told at once: the next task its model schedules is read in the new zone.
      if (await setTimezone(ctx.services.store.db, ctx.user.userId, input.timezone))
        await zoneChanged(ctx.services.agents.provisioner, ctx.user.userId, input.timezone, requestLog(ctx));
    }),

  sessions: reading
    .meta({ openapi: { method: 'GET', path: '/account/sessions', summary: 'Where the account is signed in, newest first' } })
    .input(z.void())
    .output(Sessions)
    .query(async ({ ctx }) => ({
      sessions: (await listSessions(ctx.services.store.db, ctx.user.userId)).map((s) => ({
        id: s.id,
        created_at: utc(s.createdAt),
        last_used_at: utc(s.lastUsedAt),
        user_agent: s.userAgent,
        ip: s.ip,
        current: s.id === ctx.user.sessionId,
      })),
    })),

  revokeSession: changing
    .meta({
      openapi: { method: 'DELETE', path: '/account/sessions/{id}', summary: 'End one session of the account (204); its tokens stop at once' },
      rest: { kind: 'empty' },
      errors: ['SESSION_NOT_FOUND'],
    })
    .input(IdInput)
    .output(z.void())
    .mutation(async ({ ctx, input }) => {
      if (!(await revokeOwnSession(ctx.services.store.db, ctx.user.userId, input.id, ctx.request.client)))
        throw notFound('No such session on this account', 'SESSION_NOT_FOUND');
      ctx.services.tokens.sessions.markRevoked([input.id]);
    }),

  unlinkIdentity: changing
    .meta({
      openapi: { method: 'DELETE', path: '/account/identities/{id}', summary: 'Remove a sign-in method (204); 409 LAST_IDENTITY for the last one' },
      rest: { kind: 'empty' },
      errors: ['IDENTITY_NOT_FOUND', 'LAST_IDENTITY'],
    })
    .input(IdInput)
    .output(z.void())
    .mutation(({ ctx, input }) => unlinkIdentity(ctx.services.store.db, ctx.user.userId, input.id, ctx.request.client)),

  delete: changing
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/account',
        summary: 'Delete the account, its methods, sessions, activity and agent (204); needs a sign-in within 10 minutes',
      },
      rest: { kind: 'empty' },
      errors: ['REAUTH_REQUIRED', 'LAST_ADMIN'],
    })
    .input(z.void())
    .output(z.void())
    .mutation(({ ctx }) => deleteAccount(ctx.services, ctx.user.userId, ctx.user.sessionId)),

  renamePasskey: changing
    .meta({
      openapi: { method: 'PATCH', path: '/account/passkeys/{id}', summary: 'Rename a passkey (id: its identity id); answers the account' },
      errors: ['PASSKEY_NOT_FOUND'],
    })
    .input(RenamePasskeyInput)
    .output(Account)
    .mutation(async ({ ctx, input }) => {
      await renamePasskey(ctx.services.store.db, ctx.user.userId, input.id, input.name);
      return accountView(ctx);
    }),

  /** The second factor's enrolment (auth/mfa/router.ts). */
  mfa: mfaAccountRouter,

  activity: reading
    .meta({ openapi: { method: 'GET', path: '/account/activity', summary: 'Security activity of the last 90 days, newest first' } })
    .input(z.void())
    .output(Activity)
    .query(async ({ ctx }) => ({
      events: (await listActivity(ctx.services.store.db, ctx.user.userId, USER_ACTIVITY_WINDOWS)).map((e) => ({ ...e, at: utc(e.at) })),
    })),
});
