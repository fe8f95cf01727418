import { createHash } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { logLevel, optionalString, parseConfig, port } from '../common/config.js';

export const AGENT_VERSION = '0.1.0';

const schema = z
  .object({
    AGENT_PORT: port(3100),
    HOST: z.string().min(1).default('127.0.0.1'),
    AGENT_SECRET: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
    AGENT_SECRET_SHA256: optionalString.pipe(z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits').optional()),
    AGENT_NAME: z.string().min(1).max(100).default('agent'),
    AGENT_WORKSPACE: z.string().min(1).default('./data/workspace'),
    MODEL: optionalString,
    HEARTBEAT_INTERVAL: z.preprocess((v) => (v === '' || v === undefined ? 1800 : v), z.coerce.number().int().min(0)),
    LOG_LEVEL: logLevel,
  })
  .superRefine((env, ctx) => {
    if (!env.AGENT_SECRET && !env.AGENT_SECRET_SHA256) {
      ctx.addIssue({ code: 'custom', path: ['AGENT_SECRET'], message: 'AGENT_SECRET or AGENT_SECRET_SHA256 is required' });
    }
  })
  .transform((env) => ({
    port: env.AGENT_PORT,
    host: env.HOST,
    // The plain secret is hashed here and never kept (spec: the agent keeps a SHA-256 hash).
    secretSha256: Buffer.from(
      env.AGENT_SECRET_SHA256 ?? createHash('sha256').update(env.AGENT_SECRET ?? '').digest('hex'),
      'hex',
    ),
    name: env.AGENT_NAME,
    workspace: path.resolve(env.AGENT_WORKSPACE),
    model: env.MODEL,
    /** Seconds between heartbeats; 0 disables them. */
    heartbeatIntervalSeconds: env.HEARTBEAT_INTERVAL,
    logLevel: env.LOG_LEVEL,
  }));

export type AgentConfig = z.output<typeof schema>;

export const loadAgentConfig = (env: NodeJS.ProcessEnv): AgentConfig => parseConfig(schema, env);
