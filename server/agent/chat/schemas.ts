/** Wire shapes of the chat API (spec: "Chat event"), shared by tRPC, the bridge and OpenAPI. */
import { z } from 'zod';

export const ChatId = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[\w.:@-]+$/, 'chat_id may hold letters, digits and _ . : @ -');

export const ChatMessageInput = z.object({
  message: z.string().min(1).max(32_000),
  chat_id: ChatId,
});

export const ChatEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), content: z.string(), name: z.string().optional() }),
  z.object({ type: z.literal('tool_use'), name: z.string(), input: z.string() }),
  z.object({ type: z.literal('file'), path: z.string(), caption: z.string().optional() }),
  z.object({ type: z.literal('error'), content: z.string() }),
  z.object({ type: z.literal('keepalive') }),
  z.object({ type: z.literal('stream_meta'), user_message: z.string() }),
  z.object({ type: z.literal('done') }),
]);
export type ChatEvent = z.infer<typeof ChatEvent>;
