/**
 * Passkeys (REST: POST /auth/passkey/{register,login}/{options,verify}). Registering needs the
 * access token of the account that gets the passkey (a guest is upgraded by it); sign-in ends in
 * the same pipeline as every method (auth/sign-in.ts).
 */
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { TokenPair } from '@contracts/account/tokens.js';
import { publicProcedure, rateLimited, router, userProcedure } from '../../trpc.js';
import { completeSignIn, signInCall, signInTarget } from '../sign-in.js';
import { CreationOptions, LoginOptionsInput, LoginVerifyInput, RegisterOptionsInput, RegisterVerifyInput, RequestOptions } from './schemas.js';
import { loginOptions, registrationOptions, verifyLogin, verifyRegistration } from './service.js';

export const passkeyRouter = router({
  registerOptions: userProcedure
    .use(rateLimited('auth.passkey'))
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/passkey/register/options',
        summary: 'Options for navigator.credentials.create(): a passkey for the signed-in account',
      },
    })
    .input(RegisterOptionsInput)
    .output(CreationOptions)
    .mutation(async ({ ctx }) => ({ ...(await registrationOptions(ctx.services.store.db, ctx.services.config.passkey, ctx.user.userId)) })),

  registerVerify: userProcedure
    .use(rateLimited('auth.passkey'))
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/passkey/register/verify',
        summary: 'Store the new passkey on the signed-in account (a guest becomes a full account)',
      },
    })
    .input(RegisterVerifyInput)
    .output(TokenPair)
    .mutation(async ({ ctx, input }) => {
      const target = { userId: ctx.user.userId, guest: ctx.user.guest, aal: ctx.user.aal };
      const claim = await verifyRegistration(ctx.services.store.db, ctx.services.config.passkey, {
        userId: target.userId,
        response: input.response as unknown as RegistrationResponseJSON,
        name: input.name,
      });
      return completeSignIn(signInCall(ctx), claim, target);
    }),

  loginOptions: publicProcedure
    .use(rateLimited('auth.passkey'))
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/passkey/login/options',
        protect: false,
        summary: 'Options for navigator.credentials.get(): sign in with a passkey',
      },
    })
    .input(LoginOptionsInput)
    .output(RequestOptions)
    .mutation(async ({ ctx }) => ({ ...(await loginOptions(ctx.services.store.db, ctx.services.config.passkey)) })),

  loginVerify: publicProcedure
    .use(rateLimited('auth.passkey.login'))
    .meta({
      openapi: { method: 'POST', path: '/auth/passkey/login/verify', protect: false, summary: 'Sign in with the passkey assertion' },
      errors: ['INVALID_PASSKEY', 'INVALID_CHALLENGE', 'RATE_LIMITED'],
    })
    .input(LoginVerifyInput)
    .output(TokenPair)
    .mutation(async ({ ctx, input }) => {
      const call = signInCall(ctx);
      const target = await signInTarget(call);
      const claim = await verifyLogin(ctx.services.store.db, ctx.services.config.passkey, input.response as unknown as AuthenticationResponseJSON);
      return completeSignIn(call, claim, target);
    }),
});
