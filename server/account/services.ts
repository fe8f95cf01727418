/**
 * Everything the account procedures work with, built once at start and closed at stop.
 * Domain modules take what they need from here as explicit arguments.
 */
import type { Logger } from '../common/log.js';
import type { AccountConfig } from './config.js';
import { openAccountStore, type AccountStore } from './store.js';
import { loadSigningKeys } from './tokens/keys.js';
import { TokenService } from './tokens/service.js';

export interface AccountServices {
  config: AccountConfig;
  log: Logger;
  store: AccountStore;
  tokens: TokenService;
  close(): Promise<void>;
}

export async function createAccountServices(config: AccountConfig, log: Logger): Promise<AccountServices> {
  const store = await openAccountStore(config);
  log.info({ kind: store.kind, applied: store.appliedMigrations }, 'account store open');
  const keys = await loadSigningKeys(config.signingKeysFile);
  const tokens = new TokenService(store.db, { keys, issuer: config.baseUrl, audience: config.baseUrl }, log);
  return {
    config,
    log,
    store,
    tokens,
    async close() {
      await store.close();
    },
  };
}
