/**
 * `spawn_subagent`: given to chat runs only (depth 0). It starts a background run and returns at
 * once with the run id; the parent run does not wait. A refusal (too many running, nesting, the
 * agent stopping) is a tool error whose message the model sees (see SubagentRegistry.spawn).
 */
import { defineTool, type AgentToolSet } from '../tools/types.js';
import type { SubagentRegistry } from './registry.js';
import { SpawnInput } from '@contracts/agent/subagents.js';

export function spawnSubagentTool(registry: SubagentRegistry, opts: { chatId: string; depth: number }): AgentToolSet {
  return {
    spawn_subagent: defineTool({
      description:
        'Start a subagent: a helper that works on one task in the background with the workspace tools, while you go on. ' +
        'It does not see this conversation, so put everything it needs in `task`. Returns at once with the run id; ' +
        'its result is announced in this chat when it ends.',
      inputSchema: SpawnInput,
      execute: (input) => registry.spawn({ ...input, chatId: opts.chatId, depth: opts.depth }),
    }),
  };
}
