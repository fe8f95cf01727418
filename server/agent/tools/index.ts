/** The tool sets the agent composes: a chat run gets the workspace tools (plus exec unless disabled). */
import { execTool } from './exec.js';
import { fileTools } from './files.js';
import type { AgentToolSet } from './types.js';

export type { AgentTool, AgentToolSet, ToolContext } from './types.js';
export { defineTool } from './types.js';

export interface WorkspaceToolOptions {
  workspace: string;
  exec: { enabled: boolean; timeoutMs: number };
}

export function workspaceTools(opts: WorkspaceToolOptions): AgentToolSet {
  return {
    ...fileTools(opts.workspace),
    ...(opts.exec.enabled ? execTool(opts.workspace, { timeoutMs: opts.exec.timeoutMs }) : {}),
  };
}
