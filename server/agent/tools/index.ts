/** The tool sets the agent composes: a chat run gets the workspace tools (plus exec unless disabled). */
import type { AgentConfig } from '../config.js';
import { WorkspaceQuota } from '../files/quota.js';
import { execTool } from './exec.js';
import { fileTools } from './files.js';
import type { AgentToolSet } from './types.js';

export type { AgentTool, AgentToolSet, ToolContext } from './types.js';
export { defineTool } from './types.js';

export function workspaceTools(config: Pick<AgentConfig, 'workspace' | 'workspaceQuotaBytes' | 'chat'>): AgentToolSet {
  const quota = new WorkspaceQuota(config.workspace, config.workspaceQuotaBytes);
  const { execEnabled, execTimeoutMs, execSandbox, execProxy } = config.chat;
  return {
    ...fileTools(config.workspace, quota),
    ...(execEnabled ? execTool(config.workspace, { timeoutMs: execTimeoutMs, sandbox: execSandbox, proxy: execProxy, quota }) : {}),
  };
}
