/**
 * How a local agent process is started: the compiled build's agent bundle (server/common/build.ts)
 * when this service runs from the build or when it is current, else the TypeScript source through
 * tsx (a developer who edited code without rebuilding still gets what they wrote). Decided once
 * per process.
 */
import path from 'node:path';
import { AGENT_BOOT, REPO_ROOT, RUNNING_COMPILED, serverBuildIsCurrent } from '../../../../common/build.js';

let entry: AgentEntry | undefined;

interface AgentEntry {
  args: string[];
  compiled: boolean;
  /** Added to the agent's environment. */
  env: Record<string, string>;
}

/** Arguments for `process.execPath` that run one agent, and what its environment needs for them. */
export function agentEntry(): AgentEntry {
  entry ??=
    RUNNING_COMPILED || serverBuildIsCurrent()
      ? { args: [AGENT_BOOT], compiled: true, env: {} }
      : // Resolved here, not by the agent: its working directory is its workspace, where no tsx is,
        // and no tsconfig.json either, whose paths resolve the `@contracts/…` imports.
        {
          args: ['--import', import.meta.resolve('tsx'), path.join(REPO_ROOT, 'server/agent/main.ts')],
          compiled: false,
          env: { TSX_TSCONFIG_PATH: path.join(REPO_ROOT, 'tsconfig.json') },
        };
  return entry;
}
