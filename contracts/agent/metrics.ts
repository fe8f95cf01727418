/**
 * The agent's own series that the account service sums over its running local agents (GET
 * /metrics with the agent secret and `Accept: application/json`), each with the only label names
 * it may carry. The agent defines its metrics from this table, the account service reads nothing
 * beyond it.
 */
export const AGENT_SERIES = {
  chat_runs_total: { type: 'counter', help: 'Chat runs by outcome', labels: ['outcome'] },
  tool_calls_total: { type: 'counter', help: 'Tool calls in chat runs by tool and result', labels: ['tool', 'result'] },
  upload_bytes_total: { type: 'counter', help: 'Bytes of files uploaded into the workspace', labels: [] },
  sse_streams_open: { type: 'gauge', help: 'Server-sent event streams open now (chat replies and their relays)', labels: [] },
} as const;

export type AgentSeriesName = keyof typeof AGENT_SERIES;
