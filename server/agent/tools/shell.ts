/**
 * One shell command as `exec` runs it, wherever that is (the agent's own process, or a Pod's exec
 * runner, exec-runner.ts): `sh -c` in the workspace under rlimits (CPU seconds up to its timeout,
 * no file larger than the workspace quota, 256 open files), optionally inside the nested sandbox
 * and with an HTTP proxy, its output capped, its whole process group killed at its timeout or
 * when its caller gives up. Secrets of the environment are not passed on.
 */
import { spawn } from 'node:child_process';

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
