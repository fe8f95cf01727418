import path from 'node:path';
import { z } from 'zod';
import { httpUrl, logLevel, optionalString, parseConfig, port } from '../common/config.js';
import { oauthConfig, oauthEnv } from './auth/oauth/config.js';

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
    RATE_LIMIT_MULTIPLIER: z.preprocess((v) => (v === '' || v === undefined ? 1 : v), z.coerce.number().int().min(1).max(100_000)),
    LOG_LEVEL: logLevel,
    ...oauthEnv,
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
      trustProxy: env.TRUST_PROXY ? env.TRUST_PROXY.split(',').map((s) => s.trim()).filter(Boolean) : [],
      logLevel: env.LOG_LEVEL,
      oauth: oauthConfig(env),
    };
  });

export type AccountConfig = z.output<typeof schema>;

export const loadAccountConfig = (env: NodeJS.ProcessEnv): AccountConfig => parseConfig(schema, env);
