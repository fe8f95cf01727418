import { ConfigError } from '../common/config.js';
import { onShutdownSignal } from '../common/http.js';
import { createLogger } from '../common/log.js';
import { startAgent } from './app.js';
import { loadAgentConfig } from './config.js';

try {
  const config = loadAgentConfig(process.env);
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
