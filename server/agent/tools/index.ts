/** The tool sets the agent composes: a chat run gets the workspace tools (plus exec unless disabled, and the web tools its gateway answers). */
import type { AgentConfig } from '../config.js';
import { WorkspaceQuota } from '../files/quota.js';
import { execTool } from './exec.js';
import { fileTools } from './files.js';
import type { AgentToolSet } from './types.js';
import { webTools } from './web.js';

export type { AgentTool, AgentToolSet, ToolContext } from './types.js';
export { defineTool } from './types.js';

/** `quota`: the agent's one quota (services.ts), so tools and uploads reserve from the same room. */
export function workspaceTools(
  config: Pick<AgentConfig, 'workspace' | 'workspaceQuotaBytes' | 'chat' | 'egress'>,
  quota = new WorkspaceQuota(config.workspace, config.workspaceQuotaBytes),
): AgentToolSet {
  const { execEnabled, execTimeoutMs, execSandbox, execProxy, execRunner, webTools: web } = config.chat;
  return {
    ...fileTools(config.workspace, quota),
    ...(config.egress && web.length > 0 ? webTools(config.egress, web) : {}),
    ...(execEnabled ? execTool(config.workspace, { timeoutMs: execTimeoutMs, sandbox: execSandbox, proxy: execProxy, runner: execRunner, quota }) : {}),
  };
}
