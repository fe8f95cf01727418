/**
 * The agent program: its settings (environment and the secrets pipe or file), its logger, the
 * service, and a graceful stop on SIGTERM. Two entries run it: main.ts from the sources (tsx),
 * boot.ts from the bundle production runs (dist/agent/, scripts/build.ts).
 */
import { ConfigError } from '../common/config.js';
import { onShutdownSignal } from '../common/http.js';
import { createLogger } from '../common/log.js';
import { startAgent } from './app.js';
import { loadAgentConfig } from './config.js';
import { takeSecrets } from './secrets.js';

/** How boot.ts started the bundle: whether V8 took the build's code cache (absent when run from the sources). */
export interface BootReport {
  codeCache: 'used' | 'rejected' | 'missing';
}

export async function runAgent(boot?: BootReport): Promise<void> {
  try {
    const config = loadAgentConfig(takeSecrets(process.env));
    const log = createLogger('agent', config.logLevel, config.logPretty);
    const agent = await startAgent(config, log);
    if (boot) log.debug(boot, 'agent booted from the bundle');
    // Made for a plain `node`: other V8 flags (a heap limit, a profiler) refuse it by design.
    if (boot?.codeCache === 'rejected' && process.execArgv.length === 0)
      log.warn('the build’s V8 code cache does not fit this Node: start-up compiles the agent instead (rebuild with `npm run build`)');
    onShutdownSignal(log, () => agent.close());
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`agent: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
}
