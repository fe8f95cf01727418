/**
 * Sign-in procedures. PLACEHOLDER until the account-core issue lands: only `logout`, which
 * already answers as designed for a token it does not know (204), proving the bridge's 204 path.
 */
import { z } from 'zod';
import { publicProcedure, router } from '../trpc.js';

export const RefreshTokenInput = z.object({ refresh_token: z.string().min(1).max(4096) });

export const authRouter = router({
  logout: publicProcedure
    .meta({ openapi: { method: 'POST', path: '/auth/logout', protect: false, summary: 'End one session (204)' }, rest: { kind: 'empty' } })
    .input(RefreshTokenInput)
    .output(z.void())
    .mutation(() => undefined),
});
