import v8 from 'node:v8';
import { ConfigError } from '../common/config.js';
import { onShutdownSignal } from '../common/http.js';
import { createLogger } from '../common/log.js';
import { startAgent } from './app.js';
import { loadAgentConfig } from './config.js';

// Prisma's query compiler is Wasm. Its TurboFan tier-up leaves ~12 MB of compiler memory in every
// agent for no measurable gain on the agent's few ORM queries (the chat history's hot path is
// plain SQL); Liftoff's code is what runs anyway until tier-up. Set before the first query compiles it.
v8.setFlagsFromString('--liftoff-only');

try {
  const config = loadAgentConfig(process.env);
  const log = createLogger('agent', config.logLevel);
  const agent = await startAgent(config, log);
  onShutdownSignal(log, () => agent.close());
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`agent: ${error.message}`);
    process.exit(2);
  }
  throw error;
}
