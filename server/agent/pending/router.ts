/**
 * `GET /pending`: collects the pending messages (returned ones are removed). Over tRPC it is the
 * mutation `pending.collect` (it changes state, so it is not a cacheable query).
 */
import { agentRoute, router } from '../trpc.js';
import { PendingList } from '@contracts/agent/pending.js';

export const pendingRouter = router({
  collect: agentRoute('pending.collect', { summary: 'Collect the pending messages; the returned ones are removed' })
    .output(PendingList)
    .mutation(async ({ ctx }) => ({
      messages: (await ctx.services.pending.collect()).map(({ chat_id, content, source, created_at }) => ({ chat_id, content, source, created_at })),
    })),
});
