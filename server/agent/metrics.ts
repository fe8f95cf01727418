/**
 * What an agent counts beyond HTTP requests (GET /metrics): chat runs by how they ended, tool
 * calls by tool and result, and the bytes uploaded into the workspace. Labels are bounded sets:
 * an outcome, a tool this agent has (a name the model made up is `unknown`), a result; never a
 * chat id, a path or a message.
 */
import { Counter } from 'prom-client';
import { createMetrics, type ServiceMetrics } from '../common/metrics.js';
import type { ToolResult } from './chat/loop.js';

/** How a chat run ended: on its own, on request, cut by a stop of the agent, by a new message or delete, by its time limit, or failed. */
export type RunOutcome = 'completed' | 'stopped' | 'interrupted' | 'superseded' | 'timed_out' | 'error';

export interface AgentMetrics extends ServiceMetrics {
  runEnded(outcome: RunOutcome): void;
  toolCalled(tool: string, result: ToolResult): void;
  uploaded(bytes: number): void;
}

export function createAgentMetrics(): AgentMetrics {
  const metrics = createMetrics('agent');
  const runs = new Counter({ name: 'chat_runs_total', help: 'Chat runs by outcome', labelNames: ['outcome'], registers: [metrics.registry] });
  const tools = new Counter({
    name: 'tool_calls_total',
    help: 'Tool calls in chat runs by tool and result',
    labelNames: ['tool', 'result'],
    registers: [metrics.registry],
  });
  const uploads = new Counter({ name: 'upload_bytes_total', help: 'Bytes of files uploaded into the workspace', registers: [metrics.registry] });
  return {
    ...metrics,
    runEnded: (outcome) => runs.inc({ outcome }),
    toolCalled: (tool, result) => tools.inc({ tool, result }),
    uploaded: (bytes) => uploads.inc(bytes),
  };
}
