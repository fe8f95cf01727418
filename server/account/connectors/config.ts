/**
 * Connector settings (CONNECTORS_*), spread into the account service's config schema
 * (server/account/config.ts): whether users may add their own MCP servers, which origins they may
 * name, whether guests may, and the bounds on each call (docs/connectors.md).
 */
import { z } from 'zod';
import { optionalString } from '../../common/config.js';

const seconds = (fallback: number, max: number) => z.preprocess((v) => (v === '' || v === undefined ? fallback : v), z.coerce.number().positive().max(max));
const count = (fallback: number, max: number) => z.preprocess((v) => (v === '' || v === undefined ? fallback : v), z.coerce.number().int().min(1).max(max));

export const connectorsEnv = {
  CONNECTORS: z.enum(['on', 'off']).default('on').describe('`off`: no user may add a connector, and agents are offered no connector tools'),
  CONNECTORS_ALLOW_ORIGINS: optionalString.meta({
    description: 'the only origins connectors may be added at (comma-separated, `https://mcp.example.com`); the address rules still apply',
    default: 'unset → any public origin',
  }),
  CONNECTORS_ALLOW_PRIVATE: optionalString.pipe(z.enum(['0', '1']).optional()).meta({
    description:
      '`1` lets connectors (and the authorization servers they name) be on loopback, private and other non-public addresses. For development and tests only: a user could then make this service call into its own network. Cloud metadata addresses are refused whatever this says',
    default: '0',
  }),
  CONNECTORS_FOR_GUESTS: optionalString.pipe(z.enum(['0', '1']).optional()).meta({
    description: '`1` lets guest accounts add connectors too',
    default: '0 → guests get 403 CONNECTORS_NOT_FOR_GUESTS',
  }),
  CONNECTORS_MAX_PER_USER: count(20, 200).describe('connectors one account may have'),
  CONNECTOR_CALL_TIMEOUT: seconds(120, 3600).describe(
    "seconds one connector tool call may take before the model is told it failed (progress notifications don't extend it)",
  ),
  CONNECTOR_IDLE_TIMEOUT: seconds(300, 86_400).describe(
    "seconds a kept connection to a connector's server stays open unused before it is closed (at least twice CONNECTOR_CALL_TIMEOUT, so that none a call may still be using is)",
  ),
  CONNECTOR_RESULT_MAX_BYTES: count(4 * 1024 * 1024, 64 * 1024 * 1024).describe(
    'bytes of one tool result passed to the agent (text, images and resources together); a larger result is an error',
  ),
};

type ConnectorsEnv = z.output<z.ZodObject<typeof connectorsEnv>>;

export interface ConnectorsConfig {
  enabled: boolean;
  /** Normalised origins; empty: any. */
  allowOrigins: string[];
  allowPrivate: boolean;
  forGuests: boolean;
  maxPerUser: number;
  callTimeoutMs: number;
  /** A kept connection unused this long is closed: CONNECTOR_IDLE_TIMEOUT, at least twice the call timeout. */
  idleMs: number;
  resultMaxBytes: number;
}

/** Config errors of the CONNECTORS_* group, as [variable, message]. */
export function connectorsProblems(env: ConnectorsEnv): Array<[keyof ConnectorsEnv, string]> {
  return originList(env.CONNECTORS_ALLOW_ORIGINS)
    .filter((entry) => entry.origin === undefined)
    .map((entry) => ['CONNECTORS_ALLOW_ORIGINS', `${JSON.stringify(entry.text)} is not an http(s) origin`]);
}

function originList(value: string | undefined): Array<{ text: string; origin: string | undefined }> {
  return (value ?? '')
    .split(',')
    .map((text) => text.trim())
    .filter(Boolean)
    .map((text) => {
      const url = URL.parse(text);
      return { text, origin: url && (url.protocol === 'https:' || url.protocol === 'http:') ? url.origin : undefined };
    });
}

export function connectorsConfig(env: ConnectorsEnv): ConnectorsConfig {
  return {
    enabled: env.CONNECTORS === 'on',
    allowOrigins: originList(env.CONNECTORS_ALLOW_ORIGINS).flatMap((entry) => (entry.origin ? [entry.origin] : [])),
    allowPrivate: env.CONNECTORS_ALLOW_PRIVATE === '1',
    forGuests: env.CONNECTORS_FOR_GUESTS === '1',
    maxPerUser: env.CONNECTORS_MAX_PER_USER,
    callTimeoutMs: env.CONNECTOR_CALL_TIMEOUT * 1000,
    idleMs: Math.max(env.CONNECTOR_IDLE_TIMEOUT, 2 * env.CONNECTOR_CALL_TIMEOUT) * 1000,
    resultMaxBytes: env.CONNECTOR_RESULT_MAX_BYTES,
  };
}
