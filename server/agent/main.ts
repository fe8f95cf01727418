// The V8 settings first, and the agent itself through import(): they must hold while it loads.
import './process-tuning.js';

// The same image's second role in a Kubernetes Pod: the exec runner container (tools/exec-runner.ts),
// which reads no configuration and no secret of the agent's.
const runnerSocket = process.env.AGENT_EXEC_RUNNER_LISTEN;
if (runnerSocket) {
  const [{ createFilesPrivately }, { serveExecRunner }] = await Promise.all([import('../common/private-files.js'), import('./tools/exec-runner.js')]);
  createFilesPrivately();
  await serveExecRunner(runnerSocket);
  // Its commands end with it: the container's process namespace goes when its first process does.
  process.once('SIGTERM', () => process.exit(0));
} else {
  await startAgentProcess();
}

async function startAgentProcess(): Promise<void> {
  const [{ ConfigError }, { onShutdownSignal }, { createLogger }, { startAgent }, { loadAgentConfig }, { takeSecrets }] = await Promise.all([
    import('../common/config.js'),
    import('../common/http.js'),
    import('../common/log.js'),
    import('./app.js'),
    import('./config.js'),
    import('./secrets.js'),
  ]);
  try {
    const config = loadAgentConfig(takeSecrets(process.env));
    const log = createLogger('agent', config.logLevel, config.logPretty);
    const agent = await startAgent(config, log);
    onShutdownSignal(log, () => agent.close());
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`agent: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
}
