/**
 * The account → agent proxy over tRPC: `agent.*` procedures take the user's access token, find
 * *their* agent (`provisioner.agentFor(ctx.user.userId)`: the user id comes from the verified
 * token, never from the input, so no input can name another user's agent) and forward the call
 * with the agent secret.
 *
 * - Queries and mutations are forwarded as one call each.
 * - Subscriptions (chat) are re-yielded event by event as they arrive, nothing buffered; the
 *   agent's `tracked` ids are re-yielded as `tracked` ids, so a client that reconnects with
 *   `lastEventId` resumes through the proxy (it is passed on to the agent). When the downstream
 *   subscription ends, the upstream one is unsubscribed (the agent sees its signal abort; the run
 *   itself goes on, as documented).
 * - The guest policy (guest-policy.ts) admits each call with its row's action.
 *
 * There is one forward per row of the route table (contracts/agent/routes.ts) that the tRPC face
 * proxies, built here from the row: its input schema is checked before anything leaves the
 * account, and its procedure types are the agent's own (`AgentForwards`), so adding a forward is
 * adding the row. The account router nests the record under `agent`.
 */
import { tracked, type TrackedEnvelope } from '@trpc/server';
import { TRPCClientError } from '@trpc/client';
import type { z } from 'zod';
import { RECONNECT } from '@contracts/agent/chat.js';
import type { AgentRouter } from '@contracts/agent/router.js';
import { AGENT_ROUTES, guestActionOf, type AgentRoute, type AgentRouteRow } from '@contracts/agent/routes.js';
import type { ErrorCode } from '@contracts/errors.js';
import { AppError } from '../../../common/errors.js';
import { userProcedure, type AccountContext } from '../../trpc.js';
import { agentClient, subscriptionIterable, type AgentClient, type SubscribeCallbacks } from '../client.js';
import { admitAgentAction } from './guest-policy.js';
import { agentUnreachable } from './http-proxy.js';

type UserContext = AccountContext & { user: { userId: string; sessionId: string; guest: boolean } };

/** The caller's own agent, after the guest policy admitted the call. */
async function agentOf(ctx: UserContext, route: AgentRoute, input: unknown): Promise<AgentClient> {
  await admitAgentAction(guestActionOf(route, input as { lastEventId?: string }), ctx.user, ctx.services.rateLimits, ctx.services.modelBudget);
  return agentClient(await ctx.services.agents.provisioner.agentFor(ctx.user.userId));
}

/**
 * An agent failure as the caller should see it: the agent's own status and code (404 unknown
 * id, 409 not running, 400 validation…), except its 401 (a secret problem between the services,
 * not the caller's session, so never a reason for the client to sign out) and transport
 * failures, which are 502 AGENT_UNREACHABLE.
 */
export function relayAgentError(error: unknown): unknown {
  if (error instanceof AppError) return error;
  if (error instanceof TRPCClientError) {
    const data = error.data as { code?: unknown; httpStatus?: unknown } | undefined;
    const status = typeof data?.httpStatus === 'number' ? data.httpStatus : undefined;
    // Passed on as the agent sent it: a catalogue code, or tRPC's own for a call it refused itself.
    const code = data?.code as ErrorCode;
    if (status && status !== 401 && status < 500 && typeof code === 'string') return new AppError(status, code, error.message);
    if (status && status >= 500 && status !== 502 && typeof code === 'string') return new AppError(status, code, error.message);
  }
  return agentUnreachable();
}

async function relay<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw relayAgentError(error);
  }
}

/** A forwarded query or mutation on the caller's agent, its answer time counted in agent_proxy_seconds. */
function forwardCall(ctx: UserContext, route: AgentRoute, input: unknown, call: (agent: AgentClient) => Promise<unknown>): Promise<unknown> {
  return relay(async () => {
    const agent = await agentOf(ctx, route, input);
    const sent = performance.now();
    try {
      return await call(agent);
    } finally {
      ctx.services.agentMetrics.proxied('trpc', (performance.now() - sent) / 1000);
    }
  });
}

type Tracked<E> = { id: string; data: E };
const isTracked = <E>(item: E | Tracked<E>): item is Tracked<E> =>
  typeof item === 'object' && item !== null && 'id' in item && 'data' in item && typeof (item as { id: unknown }).id === 'string';

/** The agent client's procedure at a row's dotted path (`chat.stop` → `agent.chat.stop`). */
interface ClientProcedure {
  query(input: unknown): Promise<unknown>;
  mutate(input: unknown): Promise<unknown>;
  subscribe(input: unknown, callbacks: SubscribeCallbacks<unknown>): { unsubscribe(): void };
}
const clientProcedure = (agent: AgentClient, path: string): ClientProcedure =>
  path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], agent) as ClientProcedure;

/** The forward of one row: a procedure of the same kind and input that calls the agent's. */
function forwardOf(route: AgentRoute & { procedure: string; kind: NonNullable<AgentRoute['kind']>; input: z.ZodType }) {
  const { procedure: path, input: schema } = route;
  const procedure = userProcedure.input(schema);
  if (route.kind === 'query') return procedure.query(({ ctx, input }) => forwardCall(ctx, route, input, (agent) => clientProcedure(agent, path).query(input)));
  if (route.kind === 'mutation')
    return procedure.mutation(({ ctx, input }) => forwardCall(ctx, route, input, (agent) => clientProcedure(agent, path).mutate(input)));
  return procedure.subscription(async function* ({ ctx, input }): AsyncGenerator<unknown> {
    // The slot first: a refused stream must not count a guest's message or start an agent.
    const releaseSlot = ctx.services.streamSlots.claim(ctx.user.userId);
    let closed: (() => void) | undefined;
    let ended = false;
    try {
      const agent = await agentOf(ctx, route, input);
      closed = ctx.services.agentMetrics.streamOpened();
      const events = subscriptionIterable<unknown>((callbacks) => clientProcedure(agent, path).subscribe(input, callbacks), ctx.services.shutdown);
      for await (const item of events) {
        ended = ((isTracked(item) ? item.data : item) as { type?: unknown } | null)?.type === 'done';
        yield isTracked(item) ? tracked(item.id, item.data) : item;
      }
      // This service is stopping: the stream ends here, the run goes on on the agent, and the
      // client follows it again (through another instance) from its last event id.
      if (!ended && ctx.services.shutdown.aborted) yield RECONNECT;
    } catch (error) {
      throw relayAgentError(error);
    } finally {
      closed?.();
      releaseSlot();
    }
  });
}

/** Rows the tRPC face forwards, and the name each takes under `agent.`. */
type ForwardedRow = Extract<AgentRouteRow, { proxy: 'trpc' | 'both' }>;
type ForwardName<R> = R extends { as: infer A extends string } ? A : R extends { procedure: infer P extends string } ? P : never;

/** The agent's procedure at a dotted path of its router: its input and output are the forward's. */
type ProcedureAt<Record, Path extends string> = Path extends `${infer Head}.${infer Rest}`
  ? Head extends keyof Record
    ? ProcedureAt<Record[Head], Rest>
    : never
  : Path extends keyof Record
    ? Record[Path]
    : never;
type Nested<Path extends string, Leaf> = Path extends `${infer Head}.${infer Rest}` ? { [K in Head]: Nested<Rest, Leaf> } : { [K in Path]: Leaf };
type Merged<U> = (U extends unknown ? (union: U) => void : never) extends (all: infer I) => void ? I : never;

/** The forwards' record, typed with the agent's own procedures (AgentRouter) at their names under `agent.`. */
export type AgentForwards = Merged<
  ForwardedRow extends infer R ? (R extends ForwardedRow ? Nested<ForwardName<R>, ProcedureAt<AgentRouter['_def']['record'], R['procedure']>> : never) : never
>;

function buildForwards(): AgentForwards {
  const record: Record<string, unknown> = {};
  for (const route of AGENT_ROUTES as readonly AgentRoute[]) {
    if (route.proxy !== 'trpc' && route.proxy !== 'both') continue;
    if (!route.procedure || !route.kind || !route.input)
      throw new Error(`The forwarded agent route ${route.rest ?? route.procedure} needs a procedure, its kind and its input`);
    const path = (route.as ?? route.procedure).split('.');
    const leaf = path.pop() as string;
    let node = record;
    for (const key of path) node = (node[key] ??= {}) as Record<string, unknown>;
    node[leaf] = forwardOf({ ...route, procedure: route.procedure, kind: route.kind, input: route.input });
  }
  // The record holds a forward of each row's kind and input at its name; test/proxy/agent-routes.test.ts holds it to the table.
  return record as AgentForwards;
}

/** The forwards, as the record the account's router nests under `agent` (with the bot procedures of messenger/router.ts). */
export const agentForwards = buildForwards();
