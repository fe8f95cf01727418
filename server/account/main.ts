import { ConfigError } from '../common/config.js';
import { onShutdownSignal } from '../common/http.js';
import { createLogger } from '../common/log.js';
import { startAccount } from './app.js';
import { loadAccountConfig } from './config.js';

try {
  const config = loadAccountConfig(process.env);
  const log = createLogger('account', config.logLevel, config.logPretty);
  const account = await startAccount(config, log);
  onShutdownSignal(log, () => account.close());
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`account: ${error.message}`);
    process.exit(2);
  }
  throw error;
}
