/**
 * How every agent procedure is wired.
 * 1. CONTEXT: what a procedure can reach — the agent's services, the request's logger, and
 *    whether the caller presented the agent secret.
 * 2. INITIALISATION: shared with the account service (server/common/trpc.ts).
 * 3. PROCEDURES: `publicProcedure` (only GET /health) and `agentProcedure` (everything else).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from '../common/log.js';
import { unauthorized } from '../common/errors.js';
import { initServiceTrpc } from '../common/trpc.js';
import { isAgentSecret } from './auth.js';
import type { AgentServices } from './services.js';

export interface AgentContext {
  services: AgentServices;
  log: Logger;
  authorized: boolean;
  /** Request headers, where a procedure takes metadata beside a raw body (files.upload over tRPC). */
  headers?: IncomingHttpHeaders;
}

export function createAgentContext(services: AgentServices, log: Logger, authorization: string | undefined, headers?: IncomingHttpHeaders): AgentContext {
  return { services, log, authorized: isAgentSecret(authorization, services.config.secretSha256), headers };
}

const t = initServiceTrpc<AgentContext>();

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;
export const publicProcedure = t.procedure;
export const agentProcedure = t.procedure.use(({ ctx, next }) => {
  if (!ctx.authorized) throw unauthorized('Missing or invalid agent secret', 'INVALID_AGENT_SECRET');
  return next();
});
