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
 * - The guest policy (guest-policy.ts) is applied with an action name per procedure.
 *
 * Adding a forward is one line per procedure with `forward.query / mutation / subscription`:
 *   list: forward.query(z.void(), (agent) => agent.subagents.list.query()),
 *   status: forward.query(z.void(), (agent) => agent.messenger.status.query(), 'messenger'), // guests refused
 * (in `agentForwards` below; the account router nests it under `agent`).
 */
import { tracked, type TrackedEnvelope } from '@trpc/server';
import { TRPCClientError } from '@trpc/client';
import { z } from 'zod';
import {
  ChatIdInput,
  ChatMessageInput,
  ChatRenameInput,
  ChatsQuery,
  ChatStartInput,
  ChatStreamInput,
  HistoryInput,
  RECONNECT,
  type ChatEvent,
} from '@contracts/agent/chat.js';
import { FileDeleteInput, FileMoveInput, TreeInput } from '@contracts/agent/files.js';
import { ContactIdInput, ContactPatchInput, ContactsQuery } from '@contracts/agent/messenger.js';
import { RunIdInput } from '@contracts/agent/subagents.js';
import { TaskCreateInput, TaskIdInput, TaskPatchInput } from '@contracts/agent/tasks.js';
import type { ErrorCode } from '@contracts/errors.js';
import { AppError } from '../../../common/errors.js';
import { userProcedure, type AccountContext } from '../../trpc.js';
import { agentClient, subscriptionIterable, type AgentClient, type SubscribeCallbacks } from '../client.js';
import { admitAgentAction, type AgentAction } from './guest-policy.js';
import { agentUnreachable } from './http-proxy.js';

type UserContext = AccountContext & { user: { userId: string; sessionId: string; guest: boolean } };
type ActionOf<I> = AgentAction | ((input: I) => AgentAction);

/** The caller's own agent, after the guest policy admitted the action. */
async function agentOf<I>(ctx: UserContext, action: ActionOf<I> | undefined, input: I): Promise<AgentClient> {
  const name = typeof action === 'function' ? action(input) : (action ?? 'other');
  await admitAgentAction(name, ctx.user, ctx.services.rateLimits, ctx.services.modelBudget);
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
function forwardCall<I, O>(ctx: UserContext, action: ActionOf<I> | undefined, input: I, call: (agent: AgentClient) => Promise<O>): Promise<O> {
  return relay(async () => {
    const agent = await agentOf(ctx, action, input);
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

/** One-line forwards. `call` receives the caller's agent client, the parsed input and the request's signal. */
export const forward = {
  query: <S extends z.ZodType, O>(
    input: S,
    call: (agent: AgentClient, input: z.output<S>, signal?: AbortSignal) => Promise<O>,
    action?: ActionOf<z.output<S>>,
  ) =>
    userProcedure.input(input).query(({ ctx, input: raw, signal }) => {
      const input = raw as z.output<S>;
      return forwardCall(ctx, action, input, (agent) => call(agent, input, signal));
    }),

  mutation: <S extends z.ZodType, O>(
    input: S,
    call: (agent: AgentClient, input: z.output<S>, signal?: AbortSignal) => Promise<O>,
    action?: ActionOf<z.output<S>>,
  ) =>
    userProcedure.input(input).mutation(({ ctx, input: raw, signal }) => {
      const input = raw as z.output<S>;
      return forwardCall(ctx, action, input, (agent) => call(agent, input, signal));
    }),

  /** `open` starts the agent's subscription; tracked events keep their ids. */
  subscription: <S extends z.ZodType, E>(
    input: S,
    open: (agent: AgentClient, input: z.output<S>, callbacks: SubscribeCallbacks<E | Tracked<E>>) => { unsubscribe(): void },
    action?: ActionOf<z.output<S>>,
  ) =>
    userProcedure.input(input).subscription(async function* ({ ctx, input: raw }): AsyncGenerator<E | TrackedEnvelope<E>> {
      const input = raw as z.output<S>;
      // The slot first: a refused stream must not count a guest's message or start an agent.
      const releaseSlot = ctx.services.streamSlots.claim(ctx.user.userId);
      let closed: (() => void) | undefined;
      let ended = false;
      try {
        const agent = await agentOf(ctx, action, input);
        closed = ctx.services.agentMetrics.streamOpened();
        for await (const item of subscriptionIterable<E | Tracked<E>>((callbacks) => open(agent, input, callbacks), ctx.services.shutdown)) {
          ended = ((isTracked(item) ? item.data : item) as { type?: unknown } | null)?.type === 'done';
          yield isTracked(item) ? tracked(item.id, item.data) : item;
        }
        // This service is stopping: the stream ends here, the run goes on on the agent, and the
        // client follows it again (through another instance) from its last event id.
        if (!ended && ctx.services.shutdown.aborted) yield RECONNECT as E;
      } catch (error) {
        throw relayAgentError(error);
      } finally {
        closed?.();
        releaseSlot();
      }
    }),
};

/** A message counts against the guest quota; a reconnect to its run (`lastEventId`) does not. */
const messageAction = (input: { lastEventId?: string | undefined }): AgentAction => (input.lastEventId === undefined ? 'chat.message' : 'other');

/** The forwards, as the record the account's router nests under `agent` (with the bot procedures of messenger/router.ts). */
export const agentForwards = {
  health: forward.query(z.void(), (agent) => agent.health.get.query()),

  chat: {
    send: forward.subscription<typeof ChatMessageInput, ChatEvent>(ChatMessageInput, (agent, input, cb) => agent.chat.send.subscribe(input, cb), messageAction),
    // The web client's way to send: the message in a POST body, the reply followed with `stream`.
    start: forward.mutation(ChatStartInput, (agent, input) => agent.chat.start.mutate(input), 'chat.message'),
    stop: forward.mutation(ChatIdInput, (agent, input) => agent.chat.stop.mutate(input)),
    stream: forward.subscription<typeof ChatStreamInput, ChatEvent>(ChatStreamInput, (agent, input, cb) => agent.chat.stream.subscribe(input, cb)),
    active: forward.query(ChatIdInput, (agent, input) => agent.chat.active.query(input)),
    history: forward.query(HistoryInput, (agent, input) => agent.chat.history.query(input)),
    delete: forward.mutation(ChatIdInput, (agent, input) => agent.chat.delete.mutate(input)),
  },

  chats: {
    list: forward.query(ChatsQuery, (agent, input) => agent.chats.list.query(input)),
    rename: forward.mutation(ChatRenameInput, (agent, input) => agent.chats.rename.mutate(input)),
  },

  files: {
    tree: forward.query(TreeInput, (agent, input) => agent.files.tree.query(input)),
    delete: forward.mutation(FileDeleteInput, (agent, input) => agent.files.delete.mutate(input)),
    move: forward.mutation(FileMoveInput, (agent, input) => agent.files.move.mutate(input)),
  },

  subagents: {
    list: forward.query(z.void(), (agent) => agent.subagents.list.query()),
    get: forward.query(RunIdInput, (agent, input) => agent.subagents.get.query(input)),
    stop: forward.mutation(RunIdInput, (agent, input) => agent.subagents.stop.mutate(input)),
  },

  tasks: {
    list: forward.query(z.void(), (agent) => agent.tasks.list.query()),
    create: forward.mutation(TaskCreateInput, (agent, input) => agent.tasks.create.mutate(input)),
    update: forward.mutation(TaskPatchInput, (agent, input) => agent.tasks.update.mutate(input)),
    delete: forward.mutation(TaskIdInput, (agent, input) => agent.tasks.delete.mutate(input)),
  },

  /** Collecting removes the messages on the agent, as GET /pending does. */
  pending: {
    collect: forward.mutation(z.void(), (agent) => agent.pending.collect.mutate()),
  },

  // Guests are refused the messenger integration (guest-policy.ts).
  messenger: {
    status: forward.query(z.void(), (agent) => agent.messenger.status.query(), 'messenger'),
    contacts: forward.query(ContactsQuery, (agent, input) => agent.messenger.contacts.query(input), 'messenger'),
    updateContact: forward.mutation(ContactPatchInput, (agent, input) => agent.messenger.updateContact.mutate(input), 'messenger'),
    deleteContact: forward.mutation(ContactIdInput, (agent, input) => agent.messenger.deleteContact.mutate(input), 'messenger'),
  },
};
