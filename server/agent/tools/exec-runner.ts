/**
 * `exec` in a container of its own: an agent in a Kubernetes Pod runs its commands in the Pod's
 * second container, the exec runner, not in its own (docs/security.md, "exec in a Pod cannot read
 * its agent"). A Pod cannot nest a sandbox (bubblewrap needs user namespaces, which its seccomp
 * profile and dropped capabilities refuse), and a command run by the agent as the agent's user
 * could read the agent's Secret file and, as its child, the agent's memory through /proc. The
 * runner's container is the boundary instead: the same image and user, but its own process
 * namespace (it sees no process of the agent), its own mounts (the workspace only: not the Secret,
 * not the agent's state directory), its own /tmp, and an environment with no secret in it.
 *
 * The agent sends each command over a Unix socket in a volume both containers mount
 * (AGENT_EXEC_RUNNER; the runner listens with AGENT_EXEC_RUNNER_LISTEN): `POST /run` with the
 * command and its bounds, answered with the command's result. The runner runs it exactly as a
 * local agent's exec does (`runShell`: rlimits, timeout, output cap, process group killed); a
 * request the agent gives up (a stopped run) kills the command.
 */
import { rmSync } from 'node:fs';
import http from 'node:http';
import { z } from 'zod';
import { type ExecResult, runShell, type ShellOptions } from './shell.js';

const RunRequest = z.object({
  command: z.string().min(1).max(10_000),
  cwd: z.string().startsWith('/'),
  timeout_ms: z.number().int().positive().max(3_600_000),
  max_file_bytes: z.number().int().positive().optional(),
});

/** How long the agent waits for a runner that is not listening yet (its container starts beside the agent's). */
const RUNNER_START_WAIT_MS = 15_000;

/** Serves commands on `socketPath` until the process ends. */
export async function serveExecRunner(socketPath: string): Promise<http.Server> {
  rmSync(socketPath, { force: true });
  const server = http.createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/run') return void res.writeHead(404).end();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const parsed = RunRequest.safeParse(safeJson(Buffer.concat(chunks).toString('utf8')));
      if (!parsed.success)
        return void res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'Bad run request', code: 'BAD_REQUEST' }));
      const given = new AbortController();
      // The agent gave up on the command (a stopped run, the agent's own timeout): kill it.
      res.once('close', () => {
        if (!res.writableFinished) given.abort();
      });
      const { command, cwd, timeout_ms, max_file_bytes } = parsed.data;
      try {
        const result = await runShell(command, {
          cwd,
          timeoutMs: timeout_ms,
          signal: given.signal,
          ...(max_file_bytes ? { maxFileBytes: max_file_bytes } : {}),
        });
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
      } catch (error) {
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: (error as Error).message, code: 'EXEC_FAILED' }));
      }
    });
  });
  // Commands may run as long as their timeout: no request timeout of the server's own.
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  return server;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `runShell`'s counterpart that runs the command in the runner at `socketPath`. */
export function runnerShell(socketPath: string): (command: string, opts: ShellOptions) => Promise<ExecResult> {
  return async (command, opts) => {
    const deadline = Date.now() + RUNNER_START_WAIT_MS;
    for (;;) {
      try {
        return await runOnce(socketPath, command, opts);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        const notListening = code === 'ENOENT' || code === 'ECONNREFUSED';
        if (!notListening || Date.now() > deadline || opts.signal.aborted) throw error;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  };
}

/** What a command the agent stopped reports, as runShell reports a killed one. */
const KILLED: ExecResult = { exit_code: null, signal: 'SIGKILL', timed_out: false, truncated: false, output: '' };

function runOnce(socketPath: string, command: string, opts: ShellOptions): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    if (opts.signal.aborted) return resolve(KILLED);
    const body = JSON.stringify({
      command,
      cwd: opts.cwd,
      timeout_ms: opts.timeoutMs,
      ...(opts.maxFileBytes ? { max_file_bytes: opts.maxFileBytes } : {}),
    });
    const req = http.request({ socketPath, method: 'POST', path: '/run', headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode === 200) resolve(JSON.parse(text) as ExecResult);
        else reject(new Error(`the exec runner answered ${res.statusCode}: ${text}`));
      });
      res.on('error', reject);
    });
    const onAbort = () => {
      req.destroy();
      resolve(KILLED);
    };
    opts.signal.addEventListener('abort', onAbort, { once: true });
    req.on('close', () => opts.signal.removeEventListener('abort', onAbort));
    req.on('error', reject);
    req.end(body);
  });
}
