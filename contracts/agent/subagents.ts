/** Wire shapes of the subagent API (spec: "Subagent run") and of the `spawn_subagent` tool. */
import { z } from 'zod';

export const SUBAGENT_STATUSES = ['running', 'completed', 'failed', 'timeout'] as const;
export const SubagentStatus = z.enum(SUBAGENT_STATUSES);
export type SubagentStatus = z.infer<typeof SubagentStatus>;

/** Run ids are 12 lowercase hex digits; anything id-shaped that is not a run is a 404. */
export const RunIdInput = z.object({
  run_id: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[\w-]+$/, 'run_id may hold letters, digits, _ and -'),
});

/** What the list and the detail view both show of a run. */
const SubagentRunFields = z.object({
  id: z.string(),
  label: z.string(),
  task: z.string(),
  status: SubagentStatus,
  chat_id: z.string(),
  /** Epoch seconds. */
  started_at: z.number(),
  completed_at: z.number().nullable(),
  error: z.string().nullable(),
  /** Seconds, from start to end (or to now while running). */
  duration: z.number(),
});
export type SubagentRunFields = z.infer<typeof SubagentRunFields>;

export const SubagentSummary = SubagentRunFields.extend({
  /** The result's first characters (bounded), null until there is a result. */
  result_preview: z.string().nullable(),
});
export type SubagentSummary = z.infer<typeof SubagentSummary>;

export const SubagentDetail = SubagentRunFields.extend({
  persona: z.string(),
  result: z.string().nullable(),
});
export type SubagentDetail = z.infer<typeof SubagentDetail>;

export const SubagentList = z.object({ subagents: z.array(SubagentSummary) });

export const StopResult = z.object({ status: z.literal('ok'), run_id: z.string(), message: z.string() });

export const LABEL_MAX_CHARS = 100;
export const TASK_MAX_CHARS = 16_000;
export const PERSONA_MAX_CHARS = 4_000;

/** The `spawn_subagent` tool's arguments. */
export const SpawnInput = z.object({
  label: z.string().min(1).max(LABEL_MAX_CHARS).describe('A short name for the run, shown to the user'),
  task: z.string().min(1).max(TASK_MAX_CHARS).describe('Everything the subagent needs to know: it does not see this conversation'),
  persona: z.string().max(PERSONA_MAX_CHARS).optional().describe('Optional role or style for the subagent'),
  timeout_seconds: z.number().positive().optional().describe('Optional time limit in seconds (capped by the agent)'),
});
export type SpawnInput = z.infer<typeof SpawnInput>;
