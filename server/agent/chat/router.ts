/**
 * Chat procedures. The two subscriptions are the single source of chat events (REST SSE and
 * tRPC clients both read them); the rest are JSON endpoints. Each is placed by its row of the
 * route table (@contracts/agent/routes.ts: REST route, input).
 */
import { z } from 'zod';
import { agentRoute, router } from '../trpc.js';
import { ActiveRun, ChatDeleted, ChatHistory, ChatList, ChatSummary, RunStarted } from '@contracts/agent/chat.js';

export const chatRouter = router({
  // The runtime's own iterables, not re-yielded by a generator here: one layer less per event.
  // Each one counts in sse_streams_open while it lasts.
  // A replacement (`replace_from`) starts its run first: a refusal is the answer, not an event.
  send: agentRoute('chat.send').subscription(({ input, ctx, signal }) => {
    const abort = signal ?? new AbortController().signal;
    const { replace_from } = input;
    return replace_from !== undefined && input.lastEventId === undefined
      ? ctx.services.chat.sendReplacing({ ...input, replace_from }, abort, ctx.services.metrics.sseStreams)
      : ctx.services.chat.send(input, abort, ctx.services.metrics.sseStreams);
  }),

  stream: agentRoute('chat.stream').subscription(({ input, ctx, signal }) =>
    ctx.services.chat.stream(input, signal ?? new AbortController().signal, ctx.services.metrics.sseStreams),
  ),

  // tRPC only: REST clients send with `POST /chat`, whose body already carries the message.
  start: agentRoute('chat.start')
    .output(RunStarted)
    .mutation(({ input, ctx }) => ctx.services.chat.startRun(input)),

  stop: agentRoute('chat.stop', {
    summary: 'Stop the active run (204); its stream and history end with error "stopped". 409 when no run is active, 404 for an unknown chat',
    rest: { kind: 'empty' },
  })
    .output(z.void())
    .mutation(({ input, ctx }) => ctx.services.chat.stop(input.chat_id)),

  active: agentRoute('chat.active', { summary: 'Whether a run is active for the chat' })
    .output(ActiveRun)
    .query(({ input, ctx }) => ctx.services.chat.active(input.chat_id)),

  history: agentRoute('chat.history', { summary: 'The chat history, oldest first (limit 1..1000, default 50)', errors: ['CHAT_NOT_FOUND'] })
    .output(ChatHistory)
    .query(({ input, ctx }) => ({ messages: ctx.services.chat.history(input.chat_id, input.limit) })),

  delete: agentRoute('chat.delete', { summary: 'Empty the chat history (an active run is cancelled first)', errors: ['CHAT_NOT_FOUND'] })
    .output(ChatDeleted)
    .mutation(async ({ input, ctx }) => ({ status: 'ok' as const, deleted: await ctx.services.chat.delete(input.chat_id) })),
});

/** The list of chats (`GET /chats`) and renaming one; `DELETE /chat/{chat_id}` takes a chat off it. */
export const chatsRouter = router({
  list: agentRoute('chats.list', {
    summary: 'The chats, newest activity first, each with its title and whether a reply is running (limit 1..1000, default 100)',
  })
    .output(ChatList)
    .query(({ input, ctx }) => ({ chats: ctx.services.chat.chats(input.limit) })),

  rename: agentRoute('chats.rename', { summary: 'Rename a chat (1..80 characters, one line); 404 for a chat not in the list', errors: ['CHAT_NOT_FOUND'] })
    .output(ChatSummary)
    .mutation(({ input, ctx }) => ctx.services.chat.rename(input.chat_id, input.title)),
});
