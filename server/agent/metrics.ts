/**
 * What an agent counts beyond HTTP requests (GET /metrics): chat runs by how they ended, tool
 * calls by tool and result, and the bytes uploaded into the workspace. Labels are bounded sets:
 * an outcome, a tool this agent has (a name the model made up is `unknown`), a result; never a
 * chat id, a path or a message. The account service sums these over its local agents
 * (@contracts/agent/metrics.ts).
 */
import { Counter } from 'prom-client';
import { AGENT_SERIES } from '@contracts/agent/metrics.js';
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
  const counter = (name: 'chat_runs_total' | 'tool_calls_total' | 'upload_bytes_total') =>
    new Counter({ name, help: AGENT_SERIES[name].help, labelNames: AGENT_SERIES[name].labels, registers: [metrics.registry] });
  const runs = counter('chat_runs_total');
  const tools = counter('tool_calls_total');
  const uploads = counter('upload_bytes_total');
  return {
    ...metrics,
    runEnded: (outcome) => runs.inc({ outcome }),
    toolCalled: (tool, result) => tools.inc({ tool, result }),
    uploaded: (bytes) => uploads.inc(bytes),
  };
}
