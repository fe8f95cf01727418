import { TokenPair } from '@contracts/account/tokens.js';
import { admitSignInMail } from '../../ratelimit/policy.js';
import { captchaChecked, publicProcedure, rateLimited, router } from '../../trpc.js';
import { signInCall, signInTarget } from '../sign-in.js';
import { LoginEmailInput, LoginEmailOutput, VerifyInput } from './schemas.js';
import { LOGIN_EMAIL_MESSAGE } from './service.js';

export const emailRouter = router({
  /** Same answer, same work, for every well-formed address (no enumeration); the mail goes out after the answer. */
  request: publicProcedure
    .use(rateLimited('auth.login.email'))
    .meta({
      openapi: { method: 'POST', path: '/auth/login/email', protect: false, summary: 'Mail a sign-in link and a 6-digit code' },
      errors: ['RATE_LIMITED', 'CAPTCHA_REQUIRED', 'CAPTCHA_INVALID', 'CAPTCHA_UNAVAILABLE'],
    })
    .input(LoginEmailInput)
    .use(captchaChecked)
    .output(LoginEmailOutput)
    .mutation(async ({ ctx, input }) => {
      // A signed-in caller is recorded on the code: only its own verify may join the address to it. A bad token is a 401
      // before anything is counted or sent.
      const requester = await signInTarget(signInCall(ctx));
      // Per address too, so that one address cannot be flooded from many clients.
      await admitSignInMail(ctx.services.rateLimits, input.email);
      await ctx.services.email.request(input.email, new Date(), requester?.userId);
      return { message: LOGIN_EMAIL_MESSAGE };
    }),

  /**
   * `{token}` from the link or `{email, code}`; an `Authorization: Bearer` of the account that asked for this mail attaches the
   * address to it (guest upgrade, linking); any other presenter signs in to the address's own account.
   */
  verify: publicProcedure
    .use(rateLimited('auth.verify'))
    .meta({
      openapi: { method: 'POST', path: '/auth/verify-magic-link', protect: false, summary: 'Exchange a sign-in link token or code for a token pair' },
      errors: ['INVALID_LINK', 'INVALID_CODE', 'CODE_ENTRY_PAUSED', 'IDENTITY_IN_USE', 'RATE_LIMITED'],
    })
    .input(VerifyInput)
    .output(TokenPair)
    .mutation(({ ctx, input }) => ctx.services.email.verify(input, ctx.request)),
});
