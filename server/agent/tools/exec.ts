/**
 * `exec`: a shell command with the workspace as its working directory, a timeout and an output
 * cap. In a sandboxed agent (AGENT_EXEC_SANDBOX, set by the account service) each command runs in
 * a nested sandbox without any network, and under rlimits: CPU seconds up to its timeout, no file
 * larger than the workspace quota, 256 open files; the quota is checked again after it ran.
 * In a Kubernetes Pod each command runs in the Pod's exec runner container (AGENT_EXEC_RUNNER,
 * exec-runner.ts), which holds none of the agent's secrets. Elsewhere it is not a sandbox (a shell
 * can reach what the agent's user can); `AGENT_EXEC=off` removes the tool. Secrets of the agent's own environment are not passed on.
 */
import { spawn } from 'node:child_process';
import { realpath } from 'node:fs/promises';
import { z } from 'zod';
import { quotaExceeded, type WorkspaceQuota } from '../files/quota.js';
import { runnerShell } from './exec-runner.js';
import { defineTool, type AgentToolSet } from './types.js';

export const EXEC_OUTPUT_MAX_BYTES = 64_000;
const SECRET_ENV = /(SECRET|TOKEN|PASSWORD|API_KEY|_KEY$|^DATABASE_URL$|^REDIS_URL$)/i;

/** The agent's environment without its secrets; with a proxy (AGENT_EXEC_NETWORK=allowlist), the variables tools read it from. */
function childEnv(proxy: string | undefined): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !SECRET_ENV.test(name)));
  return proxy ? { ...env, HTTP_PROXY: proxy, HTTPS_PROXY: proxy, http_proxy: proxy, https_proxy: proxy } : env;
}

export interface ExecResult {
  exit_code: number | null;
  signal: string | null;
  timed_out: boolean;
  truncated: boolean;
  output: string;
}

export interface ShellOptions {
  cwd: string;
  timeoutMs: number;
  signal: AbortSignal;
  /** bwrap and its arguments to run the command under. */
  sandbox?: string[];
  /** The largest file the command may write. */
  maxFileBytes?: number;
  /** HTTP(S) proxy the command's tools should use. */
  proxy?: string;
}

/** `sh -c command` under rlimits (dash's `ulimit` takes one limit per call; -f counts 512-byte blocks). */
function limitedShell(command: string, opts: ShellOptions): string[] {
  const limits = [`ulimit -t ${Math.ceil(opts.timeoutMs / 1000) + 1}`, 'ulimit -n 256'];
  if (opts.maxFileBytes) limits.push(`ulimit -f ${Math.ceil(opts.maxFileBytes / 512)}`);
  return ['/bin/sh', '-c', `${limits.join(' && ')} && exec /bin/sh -c "$1"`, 'exec', command];
}

export async function runShell(command: string, opts: ShellOptions): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const [file, ...args] = [...(opts.sandbox ? [...opts.sandbox, '--chdir', opts.cwd, '--'] : []), ...limitedShell(command, opts)] as [string, ...string[]];
    const child = spawn(file, args, { cwd: opts.cwd, env: childEnv(opts.proxy), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    let timedOut = false;
    const collect = (chunk: Buffer) => {
      if (size >= EXEC_OUTPUT_MAX_BYTES) {
        truncated = true;
        return;
      }
      const part = chunk.subarray(0, EXEC_OUTPUT_MAX_BYTES - size);
      if (part.length < chunk.length) truncated = true;
      chunks.push(part);
      size += part.length;
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL'); // the whole process group
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, opts.timeoutMs);
    const onAbort = () => kill();
    opts.signal.addEventListener('abort', onAbort, { once: true });
    child.on('error', (error) => {
      clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      resolve({ exit_code: code, signal, timed_out: timedOut, truncated, output: Buffer.concat(chunks).toString('utf8') });
    });
  });
}

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
