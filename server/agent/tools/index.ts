/** The tool sets the agent composes: a chat run gets the workspace tools (plus exec unless disabled). */
import type { AgentConfig } from '../config.js';
import { WorkspaceQuota } from '../files/quota.js';
import { execTool } from './exec.js';
import { fileTools } from './files.js';
import type { AgentToolSet } from './types.js';

export type { AgentTool, AgentToolSet, ToolContext } from './types.js';
export { defineTool } from './types.js';

/** `quota`: the agent's one quota (services.ts), so tools and uploads reserve from the same room. */
export function workspaceTools(
  config: Pick<AgentConfig, 'workspace' | 'workspaceQuotaBytes' | 'chat'>,
  quota = new WorkspaceQuota(config.workspace, config.workspaceQuotaBytes),
): AgentToolSet {
  const { execEnabled, execTimeoutMs, execSandbox, execProxy, execRunner } = config.chat;
  return {
    ...fileTools(config.workspace, quota),
    ...(execEnabled ? execTool(config.workspace, { timeoutMs: execTimeoutMs, sandbox: execSandbox, proxy: execProxy, runner: execRunner, quota }) : {}),
  };
}
