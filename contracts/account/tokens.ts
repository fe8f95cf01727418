/** Wire shapes shared by every sign-in method (spec: "Token pair"). */
import { z } from 'zod';

export const TokenPair = z
  .object({
    access_token: z.string(),
    refresh_token: z.string(),
    token_type: z.literal('bearer'),
    expires_in: z.number().int(),
  })
  .meta({ id: 'TokenPair' });
export type TokenPair = z.infer<typeof TokenPair>;

/** JWTs are a few hundred bytes; the bound only stops absurd inputs early. */
export const RefreshTokenInput = z.object({ refresh_token: z.string().min(1).max(4096) });

export const Me = z.object({ user_id: z.string(), session_id: z.string(), guest: z.boolean() });
