/**
 * The user's own Telegram bot (bots.ts), served by the account service at `agent.messenger.*`
 * beside the messenger procedures forwarded to the agent (server/account/router.ts puts them
 * together): its token is the account's business, never the agent's. Guests are refused, as the
 * guest policy refuses them the whole messenger integration.
 */
import { z } from 'zod';
import { AppError } from '../../common/errors.js';
import { admitAgentAction } from '../agents/proxy/guest-policy.js';
import { relayAgentError } from '../agents/proxy/router.js';
import { userProcedure, type AccountContext } from '../trpc.js';
import type { MessengerBots } from './bots.js';
import { BotConnected, BotTokenInput, OwnerCode } from './schemas.js';

type UserContext = AccountContext & { user: { userId: string; guest: boolean } };

async function botsFor(ctx: UserContext): Promise<MessengerBots> {
  await admitAgentAction('messenger', ctx.user, ctx.services.rateLimits);
  if (!ctx.services.bots) throw new AppError(501, 'NOT_IMPLEMENTED', 'This service does not host agents; configure the bot on the agent (TELEGRAM_BOT_TOKEN)');
  return ctx.services.bots;
}

export const botProcedures = {
  connectBot: userProcedure
    .meta({ openapi: { method: 'PUT', path: '/agent/messenger/bot', summary: "Connect the user's own Telegram bot (token from @BotFather)" } })
    .input(BotTokenInput)
    .output(BotConnected)
    .mutation(async ({ ctx, input }) => (await botsFor(ctx)).connect(ctx.user.userId, input.token)),
  disconnectBot: userProcedure
    .meta({
      openapi: { method: 'DELETE', path: '/agent/messenger/bot', summary: "Disconnect the user's bot and forget its token (204)" },
      rest: { kind: 'empty' },
    })
    .input(z.void())
    .output(z.void())
    .mutation(async ({ ctx }) => (await botsFor(ctx)).disconnect(ctx.user.userId)),
  ownerCode: userProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/agent/messenger/bot/owner-code',
        summary: 'A one-time code (10 minutes): whoever sends /start <code> to the bot becomes its owner',
      },
    })
    .input(z.void())
    .output(OwnerCode)
    .mutation(async ({ ctx }) => {
      try {
        return await (await botsFor(ctx)).ownerCode(ctx.user.userId);
      } catch (error) {
        throw relayAgentError(error);
      }
    }),
};
