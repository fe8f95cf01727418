/** Sign-in methods, one folder each under auth/; every one ends in a session from `tokens`. */
import { captchaRouter } from '../captcha/router.js';
import { router } from '../trpc.js';
import { emailRouter } from './email/router.js';
import { guestRouter } from './guest/router.js';
import { mfaAuthRouter } from './mfa/router.js';
import { methodsRouter } from './methods.js';
import { mobileRouter } from './mobile/router.js';
import { oauthRouter } from './oauth/router.js';
import { passkeyRouter } from './passkey/router.js';
import { walletRouter } from './wallet/router.js';

export const authRouter = router({
  guest: guestRouter,
  email: emailRouter,
  oauth: oauthRouter,
  mobile: mobileRouter,
  wallet: walletRouter,
  passkey: passkeyRouter,
  /** Not a method: the second step of any of them, for accounts with a second factor. */
  mfa: mfaAuthRouter,
  /** Not methods: which of the above this deployment offers, and whether they need a CAPTCHA (captcha/). */
  methods: methodsRouter,
  captcha: captchaRouter,
});
