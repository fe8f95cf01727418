/**
 * The agent program (or, with AGENT_EXEC_RUNNER_LISTEN, a Pod's exec runner): its settings (environment and the secrets pipe or file), its logger, the
 * service, and a graceful stop on SIGTERM. Two entries run it: main.ts from the sources (tsx),
 * boot.ts from the bundle production runs (dist/agent/, scripts/build.ts).
 */
import { ConfigError } from '../common/config.js';
import { onShutdownSignal } from '../common/http.js';
import { createLogger } from '../common/log.js';
import { createFilesPrivately } from '../common/private-files.js';
import { startAgent } from './app.js';
import { execRunnerListen, loadAgentConfig } from './config.js';
import { takeSecrets } from './secrets.js';
import { serveExecRunner } from './tools/exec-runner.js';

/** How boot.ts started the bundle: whether V8 took the build's code cache (absent when run from the sources). */
export interface BootReport {
  codeCache: 'used' | 'rejected' | 'missing';
}

export async function runAgent(boot?: BootReport): Promise<void> {
  // The same image's second role in a Kubernetes Pod: the exec runner container (tools/exec-runner.ts),
  // which reads no configuration and no secret of the agent's.
  const runnerSocket = execRunnerListen(process.env);
  if (runnerSocket) return serveRunner(runnerSocket);
  try {
    const config = loadAgentConfig(takeSecrets(process.env));
    const log = createLogger('agent', config.logLevel, config.logPretty);
    const agent = await startAgent(config, log);
    if (boot) log.info(boot, 'agent started from the bundle');
    // The cache is made for a plain `node`; flags given on purpose (a heap limit, a profiler) refuse it as expected.
    if (boot?.codeCache === 'rejected' && process.execArgv.length === 0)
      log.warn(
        'V8 refused the build’s code cache (another Node, or V8 flags from NODE_OPTIONS): this start compiled the agent; rebuild with the Node that runs agents',
      );
    onShutdownSignal(log, () => agent.close());
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`agent: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
}

async function serveRunner(socketPath: string): Promise<void> {
  createFilesPrivately();
  await serveExecRunner(socketPath);
  // Its commands end with it: the container's process namespace goes when its first process does.
  process.once('SIGTERM', () => process.exit(0));
}
