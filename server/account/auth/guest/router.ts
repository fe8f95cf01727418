import { z } from 'zod';
import { signTokenPair } from '../../tokens/jwt.js';
import { TokenPair } from '../../tokens/schemas.js';
import { publicProcedure, rateLimited, router } from '../../trpc.js';
import { signInGuest } from './sign-in.js';

/** Non-empty, bounded, printable ASCII without spaces: what device-id APIs hand out. */
export const GuestInput = z.object({
  device_id: z
    .string()
    .min(1)
    .max(200)
    .regex(/^[\x21-\x7e]+$/, 'device_id must be printable ASCII without spaces'),
});

export const guestRouter = router({
  signIn: publicProcedure
    .use(rateLimited('auth.guest'))
    .meta({ openapi: { method: 'POST', path: '/auth/guest', protect: false, summary: 'Guest sign-in keyed by device id' } })
    .input(GuestInput)
    .output(TokenPair)
    .mutation(async ({ ctx, input }) => {
      // One statement: find or create the guest and open its session (sign-in.ts).
      const session = await signInGuest(ctx.services.store.sql, input.device_id);
      return signTokenPair(ctx.services.tokens.issuer, session, session.generation);
    }),
});
