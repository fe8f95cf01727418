/**
 * The agent's documented REST paths (spec: "Agent API"), at the root. Routes only: every
 * handler calls an agent procedure. JSON routes come from procedure metadata; the rest are here.
 */
import type { IRouter, Request } from 'express';
import { agentRouter, type AgentRouter } from '../server/agent/router.js';
import { ChatEvent, ChatMessageInput, ChatStreamInput } from '../server/agent/chat/schemas.js';
import type { AgentContext } from '../server/agent/trpc.js';
import { createCallerFactory } from '../server/agent/trpc.js';
import { AGENT_VERSION } from '../server/agent/config.js';
import { unauthorized } from '../server/common/errors.js';
import { jsonBody } from '../server/common/http.js';
import { mountJsonProcedures, requireJsonObject } from './json.js';
import { eventStreamDoc, openApiDocument } from './openapi.js';
import { requestSignal, RouteTable, type CallerFor } from './routes.js';
import { writeEventStream } from './sse.js';

const createCaller = createCallerFactory(agentRouter);

export function mountAgentBridge(app: IRouter, contextFor: (req: Request) => AgentContext): void {
  const table = new RouteTable(app);
  const callerFor: CallerFor<AgentRouter> = (req, signal) => createCaller(contextFor(req), { signal });

  table.add(
    'post',
    '/chat',
    [
      jsonBody,
      requireJsonObject,
      async (req, res) => {
        const signal = requestSignal(req, res);
        const events = await callerFor(req, signal).chat.send(req.body);
        await writeEventStream(req, res, events, signal);
      },
    ],
    eventStreamDoc('Send a message; the reply streams as SSE and ends with `done`', ChatEvent, ChatMessageInput),
  );

  table.add(
    'get',
    '/chat/{chat_id}/stream',
    [
      async (req, res) => {
        const signal = requestSignal(req, res);
        // `Last-Event-ID` (an extension): resume after that event instead of replaying from the start.
        const lastEventId = req.get('last-event-id');
        const events = await callerFor(req, signal).chat.stream({ chat_id: String(req.params.chat_id), ...(lastEventId ? { lastEventId } : {}) });
        await writeEventStream(req, res, events, signal);
      },
    ],
    {
      ...eventStreamDoc('Reconnect to the active run: `stream_meta`, the buffered events, then live ones; a single `done` when none is active', ChatEvent),
      requestParams: { path: ChatStreamInput.pick({ chat_id: true }) },
    },
  );

  mountJsonProcedures(table, agentRouter, callerFor);

  let document: unknown;
  table.add('get', '/openapi.json', [
    (req, res) => {
      if (!contextFor(req).authorized) throw unauthorized('Missing or invalid agent secret', 'INVALID_AGENT_SECRET');
      document ??= openApiDocument(agentRouter, table, { title: 'Agent API', version: AGENT_VERSION, baseUrl: '/' });
      res.json(document);
    },
  ]);
  table.finish();
}
