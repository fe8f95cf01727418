/**
 * Configuration is read once, from the environment, through a zod schema per service.
 * A bad value stops the service with one line naming the variable (no stack trace).
 */
import { z } from 'zod';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses `env` with `schema`; throws ConfigError whose message names every bad variable. */
export function parseConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv): z.output<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join('.') || 'environment'}: ${issue.message}`);
  throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
}

/** Empty strings count as unset, so `FOO= npm start` behaves like no FOO at all. */
export const optionalString = z.preprocess((v) => (v === '' ? undefined : v), z.string().optional());

export const port = (fallback: number) =>
  z.preprocess((v) => (v === '' || v === undefined ? fallback : v), z.coerce.number().int().min(0).max(65535));

export const httpUrl = z.url({ protocol: /^https?$/ });

export const logLevel = z
  .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  .default('info');
