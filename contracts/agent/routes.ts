/**
 * Every route of the agent, declared once. Each row names the agent's procedure, its REST route
 * (method and path; none: tRPC only), which faces of the account service's proxy forward it, and
 * what the guest policy counts it as; a subscription is an event stream. From this table:
 * - the agent places its JSON procedures and its REST adapters (server/agent/trpc.ts `agentRoute`,
 *   server/agent/rest-routes.ts);
 * - the account's REST proxy (`{base_url}/api/v1/agent/<path>`, docs/api.md "The proxy to the
 *   user's agent") forwards exactly the REST routes of the rows it proxies, in their one
 *   documented spelling, and takes a stream slot for an event stream
 *   (server/account/agents/proxy/agent-routes.ts, http-proxy.ts);
 * - the account's tRPC proxy (`agent.*`) is built from the rows it forwards, with each row's
 *   input schema checked before the call leaves the account (server/account/agents/proxy/router.ts);
 * - the guest policy reads each row's action (server/account/agents/proxy/guest-policy.ts).
 * Adding an agent endpoint is a row here and its procedure; test/proxy/agent-routes.test.ts fails
 * when the agent's router, its REST routes and this table disagree.
 *
 * Not proxied on purpose: `GET /lifecycle` (the provisioner's question, not the user's),
 * `messenger.setOwnerCode` (the account's own bot procedures call it), `tasks.setTimezone` (the
 * account tells a running agent the user's new zone) and `GET /docs` (the
 * reference page asks for the agent secret, which users never hold).
 */
import { z } from 'zod';
import { ChatIdInput, ChatMessageInput, ChatRenameInput, ChatsQuery, ChatStartInput, ChatStreamInput, HistoryInput } from './chat.js';
import { FileDeleteInput, FileMoveInput, FilePathInput, FileReadInput, TreeInput } from './files.js';
import { ContactIdInput, ContactPatchInput, ContactsQuery, OwnerCodeInput } from './messenger.js';
import { MemoryNameInput, MemoryWriteInput } from './memory.js';
import { RunIdInput } from './subagents.js';
import { TaskCreateInput, TaskIdInput, TaskPatchInput, TaskZoneInput } from './tasks.js';

export type AgentRouteMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** What a call to the agent does, as far as the guest policy cares. */
export type AgentAction = 'chat.message' | 'messenger' | 'other';

export interface AgentRoute {
  /** The agent's procedure, as its tRPC path; null: a REST page of the agent's own that is no procedure. */
  procedure: string | null;
  /** The procedure's kind; a subscription is an event stream (over REST: SSE). */
  kind?: 'query' | 'mutation' | 'subscription';
  /** The procedure's input: the account checks it before forwarding, the agent's procedure takes the same schema. */
  input?: z.ZodType;
  /** `METHOD /path` of its REST route, as in the agent's OpenAPI document (`{name}`: one segment); none: tRPC only. */
  rest?: `${AgentRouteMethod} /${string}`;
  /** The last parameter spans one or more segments (`/files/{path}`: `docs/report.pdf`). */
  spans?: true;
  /** A REST body that is not JSON, served by a bridge adapter: a multipart upload, or a file. */
  body?: 'upload' | 'file';
  /** Which faces of the account's proxy forward it: REST (`/api/v1/agent/…`), tRPC (`agent.…`), both, or none. */
  proxy: 'rest' | 'trpc' | 'both' | 'none';
  /** Its name under the account's `agent.` when it is not the procedure's. */
  as?: string;
  /** What the guest policy counts it as; `other` when unset. */
  guest?: AgentAction | ((input: { lastEventId?: string | undefined } | undefined) => AgentAction);
}

const NoInput = z.void();

/** A message counts against the guest quota; a reconnect to its reply (`lastEventId`, tRPC only) does not. */
const messageUnlessResumed = (input: { lastEventId?: string | undefined } | undefined): AgentAction =>
  input?.lastEventId === undefined ? 'chat.message' : 'other';

// biome-ignore format: one row per line reads as a table
export const AGENT_ROUTES = [
  { procedure: 'health.get', kind: 'query', input: NoInput, rest: 'GET /health', proxy: 'both', as: 'health' },
  { procedure: 'health.lifecycle', kind: 'query', input: NoInput, rest: 'GET /lifecycle', proxy: 'none' },
  { procedure: 'chat.send', kind: 'subscription', input: ChatMessageInput, rest: 'POST /chat', proxy: 'both', guest: messageUnlessResumed },
  // The web client's way to send: the message in a POST body, the reply followed with `chat.stream`.
  { procedure: 'chat.start', kind: 'mutation', input: ChatStartInput, proxy: 'trpc', guest: 'chat.message' },
  { procedure: 'chat.stream', kind: 'subscription', input: ChatStreamInput, rest: 'GET /chat/{chat_id}/stream', proxy: 'both' },
  { procedure: 'chat.stop', kind: 'mutation', input: ChatIdInput, rest: 'POST /chat/{chat_id}/stop', proxy: 'both' },
  { procedure: 'chat.active', kind: 'query', input: ChatIdInput, rest: 'GET /chat/{chat_id}/active', proxy: 'both' },
  { procedure: 'chat.history', kind: 'query', input: HistoryInput, rest: 'GET /chat/{chat_id}/history', proxy: 'both' },
  { procedure: 'chat.delete', kind: 'mutation', input: ChatIdInput, rest: 'DELETE /chat/{chat_id}', proxy: 'both' },
  { procedure: 'chats.list', kind: 'query', input: ChatsQuery, rest: 'GET /chats', proxy: 'both' },
  { procedure: 'chats.rename', kind: 'mutation', input: ChatRenameInput, rest: 'PATCH /chats/{chat_id}', proxy: 'both' },
  { procedure: 'files.tree', kind: 'query', input: TreeInput, rest: 'GET /workspace/tree', proxy: 'both' },
  { procedure: 'files.get', kind: 'query', input: FilePathInput, rest: 'GET /files/{path}', spans: true, body: 'file', proxy: 'rest' },
  { procedure: 'files.read', kind: 'query', input: FileReadInput, proxy: 'none' },
  { procedure: 'files.upload', kind: 'mutation', rest: 'POST /files/upload', body: 'upload', proxy: 'rest' },
  { procedure: 'files.delete', kind: 'mutation', input: FileDeleteInput, rest: 'POST /files/delete', proxy: 'both' },
  { procedure: 'files.move', kind: 'mutation', input: FileMoveInput, rest: 'POST /files/move', proxy: 'both' },
  { procedure: 'subagents.list', kind: 'query', input: NoInput, rest: 'GET /subagents', proxy: 'both' },
  { procedure: 'subagents.get', kind: 'query', input: RunIdInput, rest: 'GET /subagents/{run_id}', proxy: 'both' },
  { procedure: 'subagents.stop', kind: 'mutation', input: RunIdInput, rest: 'POST /subagents/{run_id}/stop', proxy: 'both' },
  // Scheduled tasks (docs/api.md "Scheduled tasks"): the agent holds each user to its tier's limits.
  { procedure: 'tasks.create', kind: 'mutation', input: TaskCreateInput, rest: 'POST /tasks', proxy: 'both' },
  { procedure: 'tasks.list', kind: 'query', input: NoInput, rest: 'GET /tasks', proxy: 'both' },
  { procedure: 'tasks.update', kind: 'mutation', input: TaskPatchInput, rest: 'PATCH /tasks/{id}', proxy: 'both' },
  { procedure: 'tasks.delete', kind: 'mutation', input: TaskIdInput, rest: 'DELETE /tasks/{id}', proxy: 'both' },
  // The memory files the agent reads into every owner prompt (docs/api.md "Memory"): the web client's Memory page.
  { procedure: 'memory.get', kind: 'query', input: NoInput, rest: 'GET /memory', proxy: 'both' },
  { procedure: 'memory.write', kind: 'mutation', input: MemoryWriteInput, rest: 'PATCH /memory/{name}', proxy: 'both' },
  { procedure: 'memory.delete', kind: 'mutation', input: MemoryNameInput, rest: 'DELETE /memory/{name}', proxy: 'both' },
  { procedure: 'tasks.setTimezone', kind: 'mutation', input: TaskZoneInput, proxy: 'none' },
  // Collecting removes the messages on the agent: a mutation, though REST reads it with GET.
  { procedure: 'pending.collect', kind: 'mutation', input: NoInput, rest: 'GET /pending', proxy: 'both' },
  // The messenger under its generic name and the integration's (docs/api.md: messenger paths); guests get neither.
  { procedure: 'messenger.status', kind: 'query', input: NoInput, rest: 'GET /messenger/status', proxy: 'both', guest: 'messenger' },
  { procedure: 'messenger.contacts', kind: 'query', input: ContactsQuery, rest: 'GET /messenger/contacts', proxy: 'both', guest: 'messenger' },
  { procedure: 'messenger.updateContact', kind: 'mutation', input: ContactPatchInput, rest: 'PATCH /messenger/contacts/{telegram_id}', proxy: 'both', guest: 'messenger' },
  { procedure: 'messenger.deleteContact', kind: 'mutation', input: ContactIdInput, rest: 'DELETE /messenger/contacts/{telegram_id}', proxy: 'both', guest: 'messenger' },
  { procedure: 'messenger.setOwnerCode', kind: 'mutation', input: OwnerCodeInput, proxy: 'none' },
  { procedure: 'telegram.status', kind: 'query', input: NoInput, rest: 'GET /telegram/status', proxy: 'rest', guest: 'messenger' },
  { procedure: 'telegram.contacts', kind: 'query', input: ContactsQuery, rest: 'GET /telegram/contacts', proxy: 'rest', guest: 'messenger' },
  { procedure: 'telegram.updateContact', kind: 'mutation', input: ContactPatchInput, rest: 'PATCH /telegram/contacts/{telegram_id}', proxy: 'rest', guest: 'messenger' },
  { procedure: 'telegram.deleteContact', kind: 'mutation', input: ContactIdInput, rest: 'DELETE /telegram/contacts/{telegram_id}', proxy: 'rest', guest: 'messenger' },
  { procedure: 'telegram.setOwnerCode', kind: 'mutation', input: OwnerCodeInput, proxy: 'none' },
  // The agent to take away (docs/api.md "Export"): a zip streamed by a REST handler of the agent's own, no procedure (its body is bytes).
  { procedure: null, rest: 'GET /export', proxy: 'rest' },
  { procedure: null, rest: 'GET /openapi.json', proxy: 'rest' },
  { procedure: null, rest: 'GET /docs', proxy: 'none' },
] as const satisfies readonly AgentRoute[];

/** The rows as their common shape, for what reads them all. */
const ROUTES: readonly AgentRoute[] = AGENT_ROUTES;

export type AgentRouteRow = (typeof AGENT_ROUTES)[number];
export type AgentProcedureName = Exclude<AgentRouteRow['procedure'], null>;
/** Agent procedures whose row carries their input. */
export type AgentProcedureWithInput = Extract<AgentRouteRow, { input: z.ZodType }>['procedure'];
/** The row of an agent procedure. */
export type AgentRouteOf<N extends AgentProcedureName> = Extract<AgentRouteRow, { procedure: N }>;

export function agentRouteOf<N extends AgentProcedureName>(name: N): AgentRouteOf<N> {
  const row = ROUTES.find((route) => route.procedure === name);
  if (!row) throw new Error(`No agent route for ${name}`);
  return row as AgentRouteOf<N>;
}

/** A REST route of the agent: its method and path template. */
export interface AgentRestRoute {
  method: AgentRouteMethod;
  /** As in the agent's OpenAPI document: literal segments, `{name}` for one segment. */
  path: `/${string}`;
  /** The last parameter spans one or more segments. */
  spans?: true;
}

/** The method and path of a row's REST route; undefined for a tRPC-only row. */
export function restRouteOf(route: AgentRoute): AgentRestRoute | undefined {
  if (!route.rest) return undefined;
  const space = route.rest.indexOf(' ');
  return {
    method: route.rest.slice(0, space) as AgentRouteMethod,
    path: route.rest.slice(space + 1) as `/${string}`,
    ...(route.spans ? { spans: true as const } : {}),
  };
}

/** The row of a REST route (exact method and path template). */
export const agentRouteAt = (method: string, path: string): AgentRoute | undefined => ROUTES.find((route) => route.rest === `${method} ${path}`);

const proxiedOverRest = (route: AgentRoute) => route.proxy === 'rest' || route.proxy === 'both';

/** The agent's REST routes users reach through the account's REST proxy. */
export const AGENT_REST_ROUTES: readonly AgentRestRoute[] = ROUTES.filter(proxiedOverRest).flatMap((route) => restRouteOf(route) ?? []);

/** The agent's REST routes the REST proxy does not offer (see above), as `METHOD /path`. */
export const AGENT_ROUTES_NOT_PROXIED: readonly string[] = ROUTES.filter((route) => route.rest && !proxiedOverRest(route)).map((route) => route.rest as string);

/** The guest policy's action for a call of `route` with `input` (a REST call's input is not read: undefined). */
export function guestActionOf(route: AgentRoute, input?: { lastEventId?: string | undefined }): AgentAction {
  return typeof route.guest === 'function' ? route.guest(input) : (route.guest ?? 'other');
}

/** An event stream: a chat message and a reconnect to its reply take a stream slot, not a request slot. */
export const opensEventStream = (route: AgentRoute): boolean => route.kind === 'subscription';

const UPLOADS = new Set<string>(ROUTES.flatMap((route) => (route.body === 'upload' && route.rest ? [route.rest] : [])));

/** A multipart upload (`method`, and the path as sent): its body may take long, so it is held to progress instead of a deadline (docs/security.md, "Stalled bodies"). */
export const isAgentUpload = (method: string, path: string): boolean => UPLOADS.has(`${method} ${path}`);
