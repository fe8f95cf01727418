// The V8 settings first, and the agent itself through import(): they must hold while it loads.
import './process-tuning.js';

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
