/**
 * How every agent procedure is wired.
 * 1. CONTEXT: what a procedure can reach — the agent's services, the request's logger, and
 *    whether the caller presented the agent secret.
 * 2. INITIALISATION: shared with the account service (server/common/trpc.ts).
 * 3. PROCEDURES: `publicProcedure` (only GET /health) and `agentProcedure` (everything else);
 *    `agentRoute(name)` is an `agentProcedure` with its REST route and input from its row of the
 *    route table (@contracts/agent/routes.ts), which the account's proxy is built from too.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from '../common/log.js';
import { unauthorized } from '../common/errors.js';
import { initServiceTrpc, type ProcedureMeta } from '../common/trpc.js';
import type { z } from 'zod';
import {
  agentRouteOf,
  restRouteOf,
  type AgentProcedureName,
  type AgentProcedureWithInput,
  type AgentRoute,
  type AgentRouteOf,
} from '@contracts/agent/routes.js';
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

/** What the agent's REST document says of a route beyond its row of the route table. */
export interface RouteDoc {
  summary?: string;
  errors?: ProcedureMeta['errors'];
  rest?: ProcedureMeta['rest'];
  /** Served without the agent secret (only `GET /health`). */
  public?: true;
}

/**
 * A procedure's metadata from its row of the route table (@contracts/agent/routes.ts): a JSON
 * route is placed at the row's method and path (rest-bridge/json.ts); a stream, an upload or a
 * file body has its adapter in rest-routes.ts instead, and a tRPC-only row no REST route.
 */
export function routeMeta(name: AgentProcedureName, doc: RouteDoc = {}): ProcedureMeta {
  const row: AgentRoute = agentRouteOf(name);
  const rest = restRouteOf(row);
  const json = rest && row.kind !== 'subscription' && !row.body;
  return {
    ...(json
      ? { openapi: { method: rest.method, path: rest.path, ...(doc.summary ? { summary: doc.summary } : {}), ...(doc.public ? { protect: false } : {}) } }
      : {}),
    ...(doc.errors ? { errors: doc.errors } : {}),
    ...(doc.rest ? { rest: doc.rest } : {}),
  };
}

/** An `agentProcedure` placed and typed by its row of the route table: its REST route and its input. */
export const agentRoute = <N extends AgentProcedureWithInput>(name: N, doc?: RouteDoc) =>
  agentProcedure.meta(routeMeta(name, doc)).input((agentRouteOf(name) as AgentRoute).input as InputOf<N>);

type InputOf<N extends AgentProcedureWithInput> = AgentRouteOf<N> extends { input: infer I extends z.ZodType } ? I : never;
