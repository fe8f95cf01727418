/**
 * `exec`: a shell command with the workspace as its working directory, a timeout and an output
 * cap. In a sandboxed agent (AGENT_EXEC_SANDBOX, set by the account service) each command runs in
 * a nested sandbox without any network, and under rlimits: CPU seconds up to its timeout, no file
 * larger than the workspace quota, 256 open files; the quota is checked again after it ran.
 * In a Kubernetes Pod each command runs in the Pod's exec runner container (AGENT_EXEC_RUNNER,
 * exec-runner.ts), which holds none of the agent's secrets. Elsewhere it is not a sandbox (a shell
 * can reach what the agent's user can); `AGENT_EXEC=off` removes the tool. Secrets of the agent's
 * own environment are not passed on (shell.ts).
 */
import { realpath } from 'node:fs/promises';
import { z } from 'zod';
import { quotaExceeded, type WorkspaceQuota } from '../files/quota.js';
import { runnerShell } from './exec-runner.js';
import { EXEC_OUTPUT_MAX_BYTES, runShell } from './shell.js';
import { defineTool, type AgentToolSet } from './types.js';

export function execTool(
  workspace: string,
  opts: { timeoutMs: number; sandbox?: string[]; proxy?: string; runner?: string; quota: WorkspaceQuota },
): AgentToolSet {
  // In a Kubernetes Pod commands run in the Pod's exec runner container, never in the agent's (exec-runner.ts).
  const shell = opts.runner ? runnerShell(opts.runner) : runShell;
  return {
    exec: defineTool({
      description: `Run a shell command in the workspace directory. Output (stdout and stderr) is capped at ${EXEC_OUTPUT_MAX_BYTES} bytes; the command is killed after its timeout.`,
      inputSchema: z.object({
        command: z.string().min(1).max(10_000),
        timeout_seconds: z
          .number()
          .positive()
          .optional()
          .describe(`At most ${opts.timeoutMs / 1000}`),
      }),
      async execute({ command, timeout_seconds }, ctx) {
        const timeoutMs = Math.min(opts.timeoutMs, timeout_seconds ? timeout_seconds * 1000 : opts.timeoutMs);
        const cwd = await realpath(workspace);
        const { value: result, remaining } = await opts.quota.untracked(() =>
          shell(command, { cwd, timeoutMs, signal: ctx.signal, sandbox: opts.sandbox, proxy: opts.proxy, maxFileBytes: opts.quota.limitBytes }),
        );
        if (remaining > 0) return result;
        const error = quotaExceeded(opts.quota.limitBytes);
        return { ...result, error: { code: error.appCode, message: error.message } };
      },
    }),
  };
}
