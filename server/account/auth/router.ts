/** Sign-in methods, one folder each under auth/; every one ends in `tokens.startSession`. */
import { router } from '../trpc.js';
import { emailRouter } from './email/router.js';
import { guestRouter } from './guest/router.js';
import { walletRouter } from './wallet/router.js';

export const authRouter = router({
  guest: guestRouter,
  wallet: walletRouter,
  email: emailRouter,
});
