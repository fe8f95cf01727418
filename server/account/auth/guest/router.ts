import { z } from 'zod';
import { signTokenPair } from '../../tokens/jwt.js';
import { TokenPair } from '@contracts/account/tokens.js';
import { captchaChecked, clientKeyOf, publicProcedure, rateLimited, router } from '../../trpc.js';
import { signInGuestCapped } from './sign-in.js';

/**
 * Bounded printable ASCII without spaces: what device-id APIs hand out. At least 16 characters,
 * because the device id is the guest's only credential: a short or guessable one ("1", "test")
 * would open another client's guest account.
 */
export const GuestInput = z.object({
  device_id: z
    .string()
    .min(16, "device_id must be at least 16 characters: send a random id (a UUID) or the platform's device id")
    .max(200)
    .regex(/^[\x21-\x7e]+$/, 'device_id must be printable ASCII without spaces'),
});

export const guestRouter = router({
  signIn: publicProcedure
    .use(rateLimited('auth.guest'))
    .meta({
      openapi: { method: 'POST', path: '/auth/guest', protect: false, summary: 'Guest sign-in keyed by device id' },
      errors: ['RATE_LIMITED', 'GUEST_SIGNUPS_PAUSED', 'CAPTCHA_REQUIRED', 'CAPTCHA_INVALID', 'CAPTCHA_UNAVAILABLE'],
    })
    .input(GuestInput)
    .use(captchaChecked)
    .output(TokenPair)
    .mutation(async ({ ctx, input }) => {
      // One statement: find or create the guest and open its session, under the new-guest caps (sign-in.ts).
      const session = await signInGuestCapped(ctx.services.store.sql, ctx.services.rateLimits, input.device_id, clientKeyOf(ctx));
      const pair = await signTokenPair(ctx.services.tokens.issuer, session, session.generation);
      // The agent warms up once the answer is out (services.ts): the answer never waits for it.
      ctx.request.afterAnswer(() => ctx.services.tokens.signedIn(session));
      return pair;
    }),
});
