/**
 * Everything the account procedures work with, built once at start and closed at stop.
 * Domain modules take what they need from here as explicit arguments.
 */
import type { Logger } from '../common/log.js';
import type { AccountConfig } from './config.js';
import { OAuthProviders } from './auth/oauth/providers.js';
import { RateLimits } from './ratelimit/limits.js';
import { openAccountStore, type AccountStore } from './store.js';
import { loadSigningKeys } from './tokens/keys.js';
import { TokenService } from './tokens/service.js';

export interface AccountServices {
  config: AccountConfig;
  log: Logger;
  store: AccountStore;
  tokens: TokenService;
  rateLimits: RateLimits;
  /** Provider A and B for browser OAuth and native ID tokens (discovery cached). */
  oauth: OAuthProviders;
  close(): Promise<void>;
}

export async function createAccountServices(config: AccountConfig, log: Logger): Promise<AccountServices> {
  const store = await openAccountStore(config);
  log.info({ kind: store.kind, applied: store.appliedMigrations }, 'account store open');
  const keys = await loadSigningKeys(config.signingKeysFile);
  const tokens = new TokenService(store.db, { keys, issuer: config.baseUrl, audience: config.baseUrl }, log);
  const rateLimits = new RateLimits(config.redisUrl, config.rateLimitMultiplier);
  return {
    config,
    log,
    store,
    tokens,
    rateLimits,
    oauth: new OAuthProviders(config.oauth, config.baseUrl, log),
    async close() {
      await rateLimits.close();
      await store.close();
    },
  };
}
