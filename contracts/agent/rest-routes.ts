/**
 * The agent's REST routes that users reach through the account service's proxy
 * (`{base_url}/api/v1/agent/<path>`, docs/api.md "The proxy to the user's agent"), each in its one
 * documented spelling: the method and the path template of the agent's route table. The proxy
 * forwards only a request that matches one of them exactly and decides the guest rules from the
 * route it matched, never from the raw path (docs/security.md, "One spelling per agent path").
 * test/security/path-spelling.test.ts holds this list to the agent's own OpenAPI document, so a
 * route added there and forgotten here fails a test instead of going unguarded.
 *
 * Left out on purpose: `GET /lifecycle` (the provisioner's question, not the user's) and
 * `GET /docs` (the reference page asks for the agent secret, which users never hold).
 */

export type AgentRouteMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export interface AgentRestRoute {
  method: AgentRouteMethod;
  /** As in the agent's OpenAPI document: literal segments, `{name}` for one segment. */
  path: string;
  /** The last parameter spans one or more segments (`/files/{path}`: `docs/report.pdf`). */
  rest?: true;
}

const messengerRoutes = (prefix: '/messenger' | '/telegram'): AgentRestRoute[] => [
  { method: 'GET', path: `${prefix}/status` },
  { method: 'GET', path: `${prefix}/contacts` },
  { method: 'PATCH', path: `${prefix}/contacts/{telegram_id}` },
  { method: 'DELETE', path: `${prefix}/contacts/{telegram_id}` },
];

export const AGENT_REST_ROUTES: readonly AgentRestRoute[] = [
  { method: 'GET', path: '/health' },
  { method: 'GET', path: '/openapi.json' },
  { method: 'POST', path: '/chat' },
  { method: 'GET', path: '/chat/{chat_id}/stream' },
  { method: 'GET', path: '/chat/{chat_id}/active' },
  { method: 'GET', path: '/chat/{chat_id}/history' },
  { method: 'POST', path: '/chat/{chat_id}/stop' },
  { method: 'DELETE', path: '/chat/{chat_id}' },
  { method: 'GET', path: '/chats' },
  { method: 'PATCH', path: '/chats/{chat_id}' },
  { method: 'GET', path: '/pending' },
  { method: 'GET', path: '/files/{path}', rest: true },
  { method: 'POST', path: '/files/upload' },
  { method: 'POST', path: '/files/delete' },
  { method: 'POST', path: '/files/move' },
  { method: 'GET', path: '/workspace/tree' },
  { method: 'GET', path: '/subagents' },
  { method: 'GET', path: '/subagents/{run_id}' },
  { method: 'POST', path: '/subagents/{run_id}/stop' },
  { method: 'GET', path: '/tasks' },
  { method: 'POST', path: '/tasks' },
  { method: 'PATCH', path: '/tasks/{id}' },
  { method: 'DELETE', path: '/tasks/{id}' },
  ...messengerRoutes('/messenger'),
  ...messengerRoutes('/telegram'),
];

/** The agent routes of its OpenAPI document that the proxy does not offer (see above). */
export const AGENT_ROUTES_NOT_PROXIED: readonly string[] = ['GET /lifecycle', 'GET /docs'];

/** `POST /files/upload`: its body may take long, so it is held to progress instead of a deadline (docs/security.md, "Stalled bodies"). */
export const isAgentUpload = (method: string, path: string): boolean => method === 'POST' && path === '/files/upload';
