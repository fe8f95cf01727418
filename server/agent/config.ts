import { createHash } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { logLevel, optionalString, parseConfig, port } from '../common/config.js';
import { parseModelSpec } from './chat/model-spec.js';

export const AGENT_VERSION = '0.1.0';

/** A duration in seconds (fractions allowed, so tests can inject short intervals). */
const seconds = (fallback: number, { max }: { max: number }) =>
  z.preprocess((v) => (v === '' || v === undefined ? fallback : v), z.coerce.number().positive().max(max));

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
    // Chat runtime (server/agent/chat/).
    MODEL_API_KEY: optionalString,
    AGENT_EXEC: z.preprocess((v) => (v === '' || v === undefined ? 'on' : v), z.enum(['on', 'off'])),
    AGENT_EXEC_TIMEOUT: seconds(60, { max: 3600 }),
    AGENT_RUN_TIMEOUT: seconds(600, { max: 86_400 }),
    AGENT_MAX_STEPS: z.preprocess((v) => (v === '' || v === undefined ? 20 : v), z.coerce.number().int().min(1).max(200)),
    AGENT_MODEL_RETRIES: z.preprocess((v) => (v === '' || v === undefined ? 2 : v), z.coerce.number().int().min(0).max(10)),
    AGENT_KEEPALIVE_INTERVAL: seconds(15, { max: 300 }),
    AGENT_STREAM_GRACE: seconds(30, { max: 3600 }),
    AGENT_HISTORY_CONTEXT: z.preprocess((v) => (v === '' || v === undefined ? 40 : v), z.coerce.number().int().min(0).max(1000)),
  })
  .superRefine((env, ctx) => {
    if (env.MODEL) {
      try {
        parseModelSpec(env.MODEL);
      } catch (error) {
        ctx.addIssue({ code: 'custom', path: ['MODEL'], message: (error as Error).message });
      }
    }
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
    chat: {
      model: env.MODEL ? parseModelSpec(env.MODEL) : undefined,
      /** Key for `openai-compatible:` models (OpenAI and Anthropic read OPENAI_API_KEY / ANTHROPIC_API_KEY). */
      modelApiKey: env.MODEL_API_KEY,
      modelRetries: env.AGENT_MODEL_RETRIES,
      execEnabled: env.AGENT_EXEC === 'on',
      execTimeoutMs: env.AGENT_EXEC_TIMEOUT * 1000,
      runTimeoutMs: env.AGENT_RUN_TIMEOUT * 1000,
      maxSteps: env.AGENT_MAX_STEPS,
      keepaliveMs: env.AGENT_KEEPALIVE_INTERVAL * 1000,
      streamGraceMs: env.AGENT_STREAM_GRACE * 1000,
      historyContext: env.AGENT_HISTORY_CONTEXT,
    },
    /** Seconds between heartbeats; 0 disables them. */
    heartbeatIntervalSeconds: env.HEARTBEAT_INTERVAL,
    logLevel: env.LOG_LEVEL,
  }));

export type AgentConfig = z.output<typeof schema>;

export const loadAgentConfig = (env: NodeJS.ProcessEnv): AgentConfig => parseConfig(schema, env);
