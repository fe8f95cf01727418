/** Native sign-in with a provider-A ID token (REST: POST /auth/mobile/idpa). */
import { z } from 'zod';
import { TokenPair } from '@contracts/account/tokens.js';
import { publicProcedure, rateLimited, router } from '../../trpc.js';
import { completeSignIn, signInCall, signInTarget } from '../sign-in.js';
import { verifyNativeIdToken } from './idtoken.js';
import { useIdTokenOnce } from './replay.js';

export const MobileIdpaInput = z.object({
  id_token: z.string().min(1).max(16_384),
  /** The nonce the app passed to the provider's SDK: when given, the token must carry it; a token with a nonce needs it. */
  nonce: z.string().min(1).max(512).optional(),
});

export const mobileRouter = router({
  idpa: publicProcedure
    .use(rateLimited('auth.mobile'))
    .meta({
      openapi: { method: 'POST', path: '/auth/mobile/idpa', protect: false, summary: "Sign in with an ID token from provider A's native SDK" },
      errors: ['INVALID_ID_TOKEN', 'PROVIDER_UNAVAILABLE', 'PROVIDER_NOT_CONFIGURED', 'RATE_LIMITED'],
    })
    .input(MobileIdpaInput)
    .output(TokenPair)
    .mutation(async ({ ctx, input }) => {
      const call = signInCall(ctx);
      const target = await signInTarget(call);
      const now = new Date();
      const { claim, expiresAt } = await verifyNativeIdToken(ctx.services.oauth, { idToken: input.id_token, nonce: input.nonce, now });
      await useIdTokenOnce(ctx.services.store.db, { idToken: input.id_token, expiresAt, now });
      return completeSignIn(call, claim, target);
    }),
});
