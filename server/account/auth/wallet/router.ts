import { TokenPair } from '@contracts/account/tokens.js';
import { publicProcedure, rateLimited, router } from '../../trpc.js';
import { completeSignIn, signInCall, signInTarget } from '../sign-in.js';
import { WalletChallenge, WalletChallengeInput, WalletVerifyInput } from './schemas.js';
import { issueChallenge, verifySignIn } from './siwe.js';

export const walletRouter = router({
  challenge: publicProcedure
    .use(rateLimited('auth.wallet.challenge'))
    .meta({
      openapi: { method: 'POST', path: '/auth/wallet/challenge', protect: false, summary: 'A SIWE (EIP-4361) message to sign with the wallet' },
      errors: ['RATE_LIMITED'],
    })
    .input(WalletChallengeInput)
    .output(WalletChallenge)
    .mutation(async ({ ctx, input }) => {
      // A signed-in caller is recorded on the challenge: only its own verify may join the wallet to it.
      const requester = await signInTarget(signInCall(ctx));
      return issueChallenge({
        db: ctx.services.store.db,
        config: ctx.services.config,
        address: input.address,
        now: new Date(),
        requestedBy: requester?.userId,
      });
    }),

  /**
   * `Authorization: Bearer <access token>` attaches the wallet to that account (guest upgrade or linking, auth/sign-in.ts)
   * when that account asked for the challenge; any other presenter signs in to the wallet's own account.
   */
  verify: publicProcedure
    .use(rateLimited('auth.wallet.verify'))
    .meta({
      openapi: { method: 'POST', path: '/auth/wallet/verify', protect: false, summary: 'Sign in with the signed challenge' },
      errors: [
        'INVALID_NONCE',
        'NONCE_EXPIRED',
        'ADDRESS_MISMATCH',
        'CHALLENGE_INVALID',
        'INVALID_SIGNATURE',
        'WALLET_RPC_FAILED',
        'SMART_WALLET_UNSUPPORTED',
        'IDENTITY_IN_USE',
        'RATE_LIMITED',
        'GUEST_SIGNUPS_PAUSED',
      ],
    })
    .input(WalletVerifyInput)
    .output(TokenPair)
    .mutation(async ({ ctx, input }) => {
      const { services } = ctx;
      const call = signInCall(ctx);
      const presenter = await signInTarget(call);
      const wallet = await verifySignIn({ db: services.store.db, config: services.config, input, now: new Date(), rpc: services.walletRpc });
      const target = presenter && presenter.userId === wallet.requestedBy ? presenter : undefined;
      // WALLET_ACCOUNTS=full: the operator lets a wallet vouch for a full account (users/identities.ts).
      return completeSignIn(call, { provider: 'wallet', subject: wallet.address, vouches: services.config.walletAccounts === 'full' }, target);
    }),
});
