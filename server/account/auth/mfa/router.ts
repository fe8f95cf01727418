/**
 * The second factor (docs/api.md, "Second factor"): enrolment on the account (`account.mfa.*`,
 * REST under /account/mfa) and the second step of a sign-in (`auth.mfa.verify`, POST
 * /auth/mfa/verify), the one procedure an `aal1` session may call besides refresh and logout.
 */
import { z } from 'zod';
import { TokenPair } from '@contracts/account/tokens.js';
import { rateLimited, router, secondStepProcedure, userProcedure } from '../../trpc.js';
import { ConfirmTotpInput, FactorIdInput, Factors, RecoveryCodes, TotpEnrolment, VerifyMfaInput } from './schemas.js';

const reading = userProcedure.use(rateLimited('account.read'));
const changing = userProcedure.use(rateLimited('account.change'));

export const mfaAccountRouter = router({
  list: reading
    .meta({ openapi: { method: 'GET', path: '/account/mfa', summary: "The account's second factors and how many recovery codes are left" } })
    .input(z.void())
    .output(Factors)
    .query(({ ctx }) => ctx.services.mfa.list(ctx.user.userId)),

  enrolTotp: changing
    .meta({
      openapi: {
        method: 'POST',
        path: '/account/mfa/totp',
        summary: 'Start adding an authenticator app: its secret and otpauth URI (inactive until confirmed)',
      },
      errors: ['GUEST_LIMITED', 'MFA_ALREADY_ENROLLED'],
    })
    .input(z.void())
    .output(TotpEnrolment)
    .mutation(({ ctx }) => ctx.services.mfa.enrolTotp(ctx.user)),

  confirmTotp: changing
    .meta({
      openapi: {
        method: 'POST',
        path: '/account/mfa/totp/{factor_id}/confirm',
        summary: 'Confirm the authenticator app with a code it shows: the factor is active, the ten recovery codes are answered this once',
      },
      errors: ['INVALID_CODE', 'MFA_FACTOR_NOT_FOUND', 'MFA_ALREADY_CONFIRMED', 'MFA_ALREADY_ENROLLED'],
    })
    .input(ConfirmTotpInput)
    .output(RecoveryCodes)
    .mutation(({ ctx, input }) => ctx.services.mfa.confirmTotp(ctx.user, input.factor_id, input.code, ctx.request.client)),

  remove: changing
    .meta({
      openapi: { method: 'DELETE', path: '/account/mfa/{factor_id}', summary: 'Remove a second factor (204); a confirmed one needs a session that passed it' },
      rest: { kind: 'empty' },
      errors: ['MFA_FACTOR_NOT_FOUND', 'MFA_REQUIRED'],
    })
    .input(FactorIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) => ctx.services.mfa.remove(ctx.user, input.factor_id, ctx.request.client)),
});

export const mfaAuthRouter = router({
  verify: secondStepProcedure
    .use(rateLimited('auth.mfa'))
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/mfa/verify',
        summary: 'The second step of a sign-in: a code or a recovery code raises the session to aal2 and answers its new token pair',
      },
      errors: ['INVALID_CODE', 'MFA_NOT_ENROLLED', 'MFA_CODE_ENTRY_PAUSED', 'RATE_LIMITED'],
    })
    .input(VerifyMfaInput)
    .output(TokenPair)
    .mutation(({ ctx, input }) => ctx.services.mfa.verify(ctx.user, input, ctx.request.client)),
});
