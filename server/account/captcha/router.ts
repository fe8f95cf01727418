import { z } from 'zod';
import { publicProcedure, router } from '../trpc.js';
import { CaptchaPublicConfig } from './siteverify.js';

export const captchaRouter = router({
  /** Whether sign-in needs a CAPTCHA, and the widget's provider and site key (both public). */
  config: publicProcedure
    .meta({ openapi: { method: 'GET', path: '/auth/captcha', protect: false, summary: 'Whether guest and e-mail sign-in need a CAPTCHA, and which' } })
    .input(z.void())
    .output(CaptchaPublicConfig)
    .query(({ ctx }) => ctx.services.captcha?.publicConfig ?? { provider: null, site_key: null }),
});
