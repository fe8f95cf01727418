/**
 * One declaration per agent route (contracts/agent/routes.ts): the agent's router, its REST
 * routes, the account's tRPC forwards, its REST proxy and the guest policy all follow the table.
 * Each check fails when a route is declared in one place and not the others: an agent procedure
 * without its row, a row without its procedure, a REST route of the agent the table does not
 * name (or names and the agent does not serve), a forward of another kind or input than the
 * agent's procedure, a proxied route the REST proxy does not match.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZodVoid } from 'zod';
import {
  AGENT_REST_ROUTES,
  AGENT_ROUTES,
  AGENT_ROUTES_NOT_PROXIED,
  guestActionOf,
  isAgentUpload,
  opensEventStream,
  restRouteOf,
  type AgentRoute,
} from '@contracts/agent/routes.js';
import { matchAgentRoute } from '../../server/account/agents/proxy/agent-routes.js';
import { restAgentAction } from '../../server/account/agents/proxy/guest-policy.js';
import { accountRouter } from '../../server/account/router.js';
import { createLogger } from '../../server/common/log.js';
import { mountAgentBridge } from '../../server/agent/rest-routes.js';
import { agentRouter } from '../../server/agent/router.js';
import type { AgentContext } from '../../server/agent/trpc.js';

type ProcedureDef = { _def: { type: string; inputs: unknown[]; meta?: { openapi?: { method: string; path: string } } } };
const agentProcedures = agentRouter._def.procedures as unknown as Record<string, ProcedureDef>;
const accountProcedures = accountRouter._def.procedures as unknown as Record<string, ProcedureDef>;
const rows: readonly AgentRoute[] = AGENT_ROUTES;
const procedureRows = rows.filter((row): row is AgentRoute & { procedure: string } => row.procedure !== null);

/** The same input: the very schema, or both none (no parser, or `z.void()`). */
function sameInput(parser: unknown, schema: unknown): boolean {
  const none = (value: unknown) => value === undefined || value instanceof ZodVoid;
  return parser === schema || (none(parser) && none(schema));
}

let agentDocument: { paths: Record<string, Record<string, unknown>> };
let served: (method: string, path: string) => Promise<number>;
let close: () => Promise<void>;

beforeAll(async () => {
  // The agent's REST routes as its own bridge mounts them; nothing is called but its documents.
  const app = express();
  const context = { authorized: true, log: createLogger('agent-routes-test', 'silent'), services: undefined as never } satisfies AgentContext;
  mountAgentBridge(app, () => context);
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  served = async (method, path) => (await fetch(`${base}${path}`, { method })).status;
  agentDocument = (await (await fetch(`${base}/openapi.json`)).json()) as typeof agentDocument;
  close = () => new Promise((resolve) => server.close(() => resolve()));
});
afterAll(() => close?.());

describe('the agent route table', () => {
  it('names every procedure of the agent once, with its kind and input', () => {
    expect(procedureRows.map((row) => row.procedure).sort()).toEqual(Object.keys(agentProcedures).sort());
    for (const row of procedureRows) {
      const procedure = agentProcedures[row.procedure];
      expect(procedure?._def.type, row.procedure).toBe(row.kind);
      if (row.input) expect(sameInput(procedure?._def.inputs[0], row.input), `${row.procedure} takes the input of its row`).toBe(true);
    }
  });

  it("is the agent's REST routes: its OpenAPI document has each row's route and no other", () => {
    const documented = Object.entries(agentDocument.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    );
    // The document describes the API, not itself or its reference page.
    const declared = rows.flatMap((row) => (row.rest && row.rest !== 'GET /openapi.json' && row.rest !== 'GET /docs' ? [row.rest] : []));
    expect(new Set(documented)).toEqual(new Set(declared));
    expect(documented).toHaveLength(declared.length);
    for (const row of rows) {
      const rest = restRouteOf(row);
      const meta = row.procedure ? agentProcedures[row.procedure]?._def.meta?.openapi : undefined;
      // A JSON route is placed from its procedure's metadata; an event stream, an upload or a file body by its adapter.
      if (rest && row.kind !== 'subscription' && !row.body && row.procedure)
        expect(meta, row.procedure).toEqual(expect.objectContaining({ method: rest.method, path: rest.path }));
      else expect(meta, `${row.procedure} has no JSON route`).toBeUndefined();
    }
  });

  it('serves the two pages that are no procedure', async () => {
    expect(await served('GET', '/openapi.json')).toBe(200);
    expect(await served('GET', '/docs')).toBe(200);
  });

  it("forwards over tRPC exactly the rows it proxies there, each as the agent's procedure of the same kind and input", () => {
    const forwarded = rows.filter((row) => row.proxy === 'trpc' || row.proxy === 'both');
    const names = forwarded.map((row) => `agent.${row.as ?? row.procedure}`);
    // What the account serves itself under `agent.` (the user's own bot) has a REST route of the account's own.
    const own = Object.keys(accountProcedures).filter(
      (name) => name.startsWith('agent.') && accountProcedures[name]?._def.meta?.openapi?.path.startsWith('/agent/'),
    );
    expect(own.sort()).toEqual(['agent.messenger.connectBot', 'agent.messenger.disconnectBot', 'agent.messenger.ownerCode']);
    expect(
      Object.keys(accountProcedures)
        .filter((name) => name.startsWith('agent.') && !own.includes(name))
        .sort(),
    ).toEqual([...names].sort());
    for (const [i, row] of forwarded.entries()) {
      const procedure = accountProcedures[names[i] as string];
      expect(procedure?._def.type, names[i]).toBe(row.kind);
      expect(procedure?._def.inputs[0], `${names[i]} checks the row's input`).toBe(row.input);
    }
  });

  it('forwards over REST exactly the rows it proxies there, each matched in its documented spelling', () => {
    const concrete = (template: string) => template.replace(/\{(\w+)\}/g, (_m, name: string) => (name === 'path' ? 'notes/a.txt' : 'x1'));
    for (const row of rows) {
      const rest = restRouteOf(row);
      if (!rest) continue;
      const match = matchAgentRoute(rest.method, concrete(rest.path));
      const proxied = row.proxy === 'rest' || row.proxy === 'both';
      expect(match && 'route' in match ? match.route : undefined, row.rest).toEqual(proxied ? rest : undefined);
    }
    expect(AGENT_REST_ROUTES.map((route) => `${route.method} ${route.path}`).sort()).toEqual(
      rows
        .filter((row) => row.rest && (row.proxy === 'rest' || row.proxy === 'both'))
        .map((row) => row.rest as string)
        .sort(),
    );
    expect([...AGENT_ROUTES_NOT_PROXIED].sort()).toEqual(['GET /docs', 'GET /lifecycle']);
  });

  it("gives each REST call its row's guest action, stream slot and upload deadline", () => {
    for (const row of rows) {
      const rest = restRouteOf(row);
      if (!rest) continue;
      expect(restAgentAction(rest), row.rest).toBe(guestActionOf(row));
      expect(opensEventStream(row), row.rest).toBe(row.kind === 'subscription');
      expect(isAgentUpload(rest.method, rest.path), row.rest).toBe(row.body === 'upload');
    }
    // The rules the guest policy has always had, read from the rows.
    expect(rows.filter((row) => guestActionOf(row) === 'chat.message').map((row) => row.procedure)).toEqual(['chat.send', 'chat.start']);
    expect(guestActionOf(rows.find((row) => row.procedure === 'chat.send') as AgentRoute, { lastEventId: 'r-1' })).toBe('other');
    expect(rows.filter((row) => guestActionOf(row) === 'messenger').every((row) => /^(messenger|telegram)\./.test(row.procedure ?? ''))).toBe(true);
    expect(rows.filter((row) => opensEventStream(row)).map((row) => row.rest)).toEqual(['POST /chat', 'GET /chat/{chat_id}/stream']);
  });
});
