/**
 * Chat procedures. PLACEHOLDER until the chat-runtime issue lands: `send` streams a single
 * `done` event, which proves the subscription → SSE bridge path end to end.
 */
import { agentProcedure, router } from '../trpc.js';
import { ChatMessageInput, type ChatEvent } from './schemas.js';

export const chatRouter = router({
  send: agentProcedure.input(ChatMessageInput).subscription(async function* (): AsyncGenerator<ChatEvent> {
    yield { type: 'done' };
  }),
});
