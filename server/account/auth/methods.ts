/**
 * `GET /auth/methods`: the sign-in methods this deployment offers, so clients show only those (a
 * provider without its settings is left out, rather than failing after a click). Public: it says
 * nothing a sign-in page would not show.
 */
import { z } from 'zod';
import { publicProcedure, router } from '../trpc.js';
import { missingSettings } from './oauth/config.js';

export const SignInMethodId = z.enum(['email', 'idpa', 'idpb', 'wallet', 'passkey', 'guest']);
export const SignInMethods = z.object({ methods: z.array(SignInMethodId) });
export type SignInMethods = z.output<typeof SignInMethods>;

export const methodsRouter = router({
  list: publicProcedure
    .meta({ openapi: { method: 'GET', path: '/auth/methods', protect: false, summary: 'The sign-in methods this deployment offers' } })
    .input(z.void())
    .output(SignInMethods)
    .query(({ ctx }) => {
      const { oauth } = ctx.services.config;
      const providers = (['idpa', 'idpb'] as const).filter((provider) => missingSettings(oauth, provider).length === 0);
      return { methods: ['email', ...providers, 'wallet', 'passkey', 'guest'] };
    }),
});
