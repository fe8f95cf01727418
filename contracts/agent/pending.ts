/** Wire shapes of `GET /pending` (spec: "Pending message"). */
import { z } from 'zod';

/** `heartbeat`, `subagent` and `task` are the sources this agent writes; others may come (messenger). */
export const PendingSource = z.string();

export const PendingMessage = z.object({
  chat_id: z.string(),
  content: z.string(),
  source: PendingSource,
  /** UTC, ISO 8601 without a zone suffix (docs/api.md, "Pending messages"), e.g. `2026-11-22T20:04:33.208`. */
  created_at: z.string(),
});
export type PendingMessage = z.infer<typeof PendingMessage>;

export const PendingList = z.object({ messages: z.array(PendingMessage) });
