/** Sign-in methods, one folder each under auth/; every one ends in `tokens.startSession`. */
import { router } from '../trpc.js';
import { guestRouter } from './guest/router.js';
import { mobileRouter } from './mobile/router.js';
import { oauthRouter } from './oauth/router.js';

export const authRouter = router({
  guest: guestRouter,
  oauth: oauthRouter,
  mobile: mobileRouter,
});
