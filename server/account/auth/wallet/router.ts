import { TokenPair } from '../../tokens/schemas.js';
import { publicProcedure, rateLimited, router } from '../../trpc.js';
import { signInWithIdentity } from '../../users/identities.js';
import { JsonRpcClient } from './rpc.js';
import { WalletChallenge, WalletChallengeInput, WalletVerifyInput } from './schemas.js';
import { issueChallenge, verifySignIn } from './siwe.js';

export const walletRouter = router({
  challenge: publicProcedure
    .use(rateLimited('auth.wallet.challenge'))
    .meta({ openapi: { method: 'POST', path: '/auth/wallet/challenge', protect: false, summary: 'A SIWE (EIP-4361) message to sign with the wallet' } })
    .input(WalletChallengeInput)
    .output(WalletChallenge)
    .mutation(({ ctx, input }) => issueChallenge({ db: ctx.services.store.db, config: ctx.services.config, address: input.address, now: new Date() })),

  /** `Authorization: Bearer <guest access token>` upgrades that guest in place (docs/api.md, Decisions: guest upgrade). */
  verify: publicProcedure
    .use(rateLimited('auth.wallet.verify'))
    .meta({ openapi: { method: 'POST', path: '/auth/wallet/verify', protect: false, summary: 'Sign in with the signed challenge' } })
    .input(WalletVerifyInput)
    .output(TokenPair)
    .mutation(async ({ ctx, input }) => {
      const { services } = ctx;
      const guestUserId = await services.tokens.guestToUpgrade(ctx.request.authorization);
      const rpc = services.config.rpcUrl ? new JsonRpcClient(services.config.rpcUrl) : undefined;
      const wallet = await verifySignIn({ db: services.store.db, config: services.config, input, now: new Date(), rpc });
      const user = await signInWithIdentity(services.store.db, { provider: 'wallet', subject: wallet.address }, guestUserId);
      return services.tokens.startSession(user);
    }),
});
