import path from 'node:path';
import { z } from 'zod';
import { httpUrl, logLevel, optionalString, parseConfig, port } from '../common/config.js';

const schema = z
  .object({
    PORT: port(3000),
    HOST: z.string().min(1).default('127.0.0.1'),
    DATA_DIR: z.string().min(1).default('./data'),
    DATABASE_URL: optionalString.pipe(z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional()),
    BASE_URL: optionalString.pipe(httpUrl.optional()),
    FRONTEND_URL: optionalString.pipe(httpUrl.optional()),
    REDIS_URL: optionalString.pipe(z.string().regex(/^rediss?:\/\//, 'must be a redis:// URL').optional()),
    TRUST_PROXY: optionalString,
    SIGNING_KEYS_FILE: optionalString,
    AGENT_PROVISIONER: z.enum(['local', 'static']).default('local'),
    AGENT_IDLE_TIMEOUT: z.preprocess((v) => (v === '' || v === undefined ? 1800 : v), z.coerce.number().int().min(0)),
    AGENT_SECRETS_KEY: optionalString.pipe(
      z.string().refine((v) => Buffer.from(v, 'base64').length === 32, 'must be 32 bytes, base64-encoded').optional(),
    ),
    WALLET_CHAIN_ID: z.preprocess((v) => (v === '' || v === undefined ? 1 : v), z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER)),
    RPC_URL: optionalString.pipe(httpUrl.optional()),
    RATE_LIMIT_MULTIPLIER: z.preprocess((v) => (v === '' || v === undefined ? 1 : v), z.coerce.number().int().min(1).max(100_000)),
    LOG_LEVEL: logLevel,
  })
  .transform((env) => {
    const baseUrl = (env.BASE_URL ?? `http://${env.HOST === '0.0.0.0' ? '127.0.0.1' : env.HOST}:${env.PORT}`).replace(/\/$/, '');
    return {
      port: env.PORT,
      host: env.HOST,
      dataDir: path.resolve(env.DATA_DIR),
      signingKeysFile: path.resolve(env.SIGNING_KEYS_FILE ?? path.join(env.DATA_DIR, 'signing-keys.json')),
      databaseUrl: env.DATABASE_URL,
      baseUrl,
      frontendUrl: (env.FRONTEND_URL ?? baseUrl).replace(/\/$/, ''),
      redisUrl: env.REDIS_URL,
      rateLimitMultiplier: env.RATE_LIMIT_MULTIPLIER,
      agentProvisioner: env.AGENT_PROVISIONER,
      agentIdleTimeoutSeconds: env.AGENT_IDLE_TIMEOUT,
      agentSecretsKey: env.AGENT_SECRETS_KEY,
      /** SIWE (auth/wallet): the EIP-155 chain id in challenges; the JSON-RPC endpoint for smart-wallet signatures. */
      walletChainId: env.WALLET_CHAIN_ID,
      rpcUrl: env.RPC_URL,
      trustProxy: env.TRUST_PROXY ? env.TRUST_PROXY.split(',').map((s) => s.trim()).filter(Boolean) : [],
      logLevel: env.LOG_LEVEL,
    };
  });

export type AccountConfig = z.output<typeof schema>;

export const loadAccountConfig = (env: NodeJS.ProcessEnv): AccountConfig => parseConfig(schema, env);
