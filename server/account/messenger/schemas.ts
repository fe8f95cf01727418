/** Wire shapes of the account's own messenger paths (a user's bot). */
import { z } from 'zod';

export const BotTokenInput = z.object({ token: z.string().min(1).max(300) });
export const BotConnected = z.object({ connected: z.literal(true), bot_username: z.string(), bot_name: z.string() });
export type BotConnected = z.infer<typeof BotConnected>;
export const OwnerCode = z.object({ code: z.string(), expires_at: z.string() });
export type OwnerCode = z.infer<typeof OwnerCode>;
