/**
 * The agent's documented REST paths (spec: "Agent API"), at the root: this service's route
 * table, made of the generic machinery of rest-bridge/. Routes only: every
 * handler calls an agent procedure (but the API reference, `/docs`: rest-bridge/api-docs.ts).
 * JSON routes come from procedure metadata; the adapters for streams, uploads and file bodies are
 * here, each at its row of the route table (@contracts/agent/routes.ts).
 */
import type { IRouter, Request } from 'express';
import { agentRouter, type AgentRouter } from './router.js';
import { ChatEvent, ChatMessageInput, ChatStreamInput } from '@contracts/agent/chat.js';
import type { AgentContext } from './trpc.js';
import { createCallerFactory } from './trpc.js';
import { AGENT_VERSION } from './config.js';
import { unauthorized } from '../common/errors.js';
import { jsonBody } from '../common/http.js';
import { UploadForm, UploadResult } from '@contracts/agent/files.js';
import { MAX_UPLOAD_BYTES } from './files/upload.js';
import { mountApiDocs } from '../../rest-bridge/api-docs.js';
import { sendFileBody } from '../../rest-bridge/file.js';
import { mountJsonProcedures, requireJsonObject } from '../../rest-bridge/json.js';
import { readMultipart } from '../../rest-bridge/multipart.js';
import { eventStreamDoc, fileBodyDoc, multipartDoc, openApiDocument } from '../../rest-bridge/openapi.js';
import { requestSignal, RouteTable, type CallerFor, type HttpMethod, type ServiceErrorCodes } from '../../rest-bridge/routes.js';
import { agentRouteOf, restRouteOf, type AgentProcedureName } from '@contracts/agent/routes.js';
import { writeEventStream } from '../../rest-bridge/sse.js';
import { pipeline } from 'node:stream/promises';
import { exportZip } from './export/export.js';

const createCaller = createCallerFactory(agentRouter);

/** The method and path of an adapter's route, from its procedure's row of the route table. */
function routeOf(name: AgentProcedureName): [HttpMethod, string] {
  const rest = restRouteOf(agentRouteOf(name));
  if (!rest) throw new Error(`The agent route table gives ${name} no REST route`);
  return [rest.method.toLowerCase() as HttpMethod, rest.path];
}

/** What any agent route can answer, and what one behind the agent secret adds (trpc.ts). */
const AGENT_ERRORS: ServiceErrorCodes = { everyRoute: ['INTERNAL', 'METHOD_NOT_ALLOWED'], authenticated: ['INVALID_AGENT_SECRET'] };

export function mountAgentBridge(app: IRouter, contextFor: (req: Request) => AgentContext): void {
  const table = new RouteTable(app, AGENT_ERRORS);
  const callerFor: CallerFor<AgentRouter> = (req, signal) => createCaller(contextFor(req), { signal });

  table.add(
    ...routeOf('chat.send'),
    [
      jsonBody,
      requireJsonObject,
      async (req, res) => {
        const signal = requestSignal(res);
        const events = await callerFor(req, signal).chat.send(req.body);
        await writeEventStream(req, res, events, signal);
      },
    ],
    eventStreamDoc('Send a message; the reply streams as SSE and ends with `done`', ChatEvent, ChatMessageInput),
    {
      authenticated: true,
      errors: [
        'MALFORMED_JSON',
        'BAD_REQUEST',
        'PAYLOAD_TOO_LARGE',
        'UNSUPPORTED_MEDIA_TYPE',
        'REQUEST_TIMEOUT',
        'VALIDATION_FAILED',
        'SHUTTING_DOWN',
        'RUN_ACTIVE',
        'MESSAGE_NOT_FOUND',
      ],
    },
  );

  // Workspace files: multipart upload and raw file body adapters calling files.* procedures.
  table.add(
    ...routeOf('files.upload'),
    [
      async (req, res) => {
        // A stalled upload is cut by the shell (408 UPLOAD_STALLED, server/common/http.ts BodyTimeouts).
        const signal = requestSignal(res);
        // Room for the multipart envelope around a file of the maximum size; the procedure counts the file itself.
        const form = readMultipart(req, res, { maxBodyBytes: MAX_UPLOAD_BYTES + 1024 * 1024, files: 1 });
        try {
          res.json(await callerFor(req, signal).files.upload(form));
        } finally {
          form.close();
        }
      },
    ],
    multipartDoc('Upload a file into the workspace (max 50 MB; an existing name gets a ` (n)` suffix)', UploadForm, UploadResult, {
      '400': 'No `file` field, or a malformed form',
      '403': 'Target outside the workspace, or a protected name',
      '409': 'Target is a file, or no free name',
      '413': 'Over 50 MB',
    }),
    {
      authenticated: true,
      errors: [
        'UNSUPPORTED_MEDIA_TYPE',
        'MALFORMED_MULTIPART',
        'TOO_MANY_PARTS',
        'FIELD_TOO_LARGE',
        'PAYLOAD_TOO_LARGE',
        'REQUEST_ABORTED',
        'UPLOAD_STALLED',
        'MISSING_FILE',
        'INVALID_PATH',
        'FORBIDDEN_PATH',
        'NOT_A_DIRECTORY',
        'NAME_TAKEN',
        'QUOTA_EXCEEDED',
      ],
    },
  );
  table.add(
    ...routeOf('files.get'),
    [
      async (req, res) => {
        const caller = callerFor(req, requestSignal(res));
        const path = ([] as string[]).concat(req.params.path ?? []).join('/');
        const info = await caller.files.get({ path });
        await sendFileBody(req, res, {
          name: info.name,
          size: info.size,
          contentType: info.content_type,
          etag: info.etag,
          modified: new Date(info.modified),
          open: (range) => caller.files.read({ path, ...range, etag: info.etag }),
        });
      },
    ],
    fileBodyDoc('Download a workspace file (Range and conditional requests supported)', [
      { name: 'path', in: 'path', required: true, description: 'Workspace-relative file path', schema: { type: 'string' } },
    ]),
    { expressPath: '/files/*path', authenticated: true, errors: ['INVALID_PATH', 'FORBIDDEN_PATH', 'FILE_NOT_FOUND', 'FILE_CHANGED', 'RANGE_NOT_SATISFIABLE'] },
  );
  table.add(
    ...routeOf('chat.stream'),
    [
      async (req, res) => {
        const signal = requestSignal(res);
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
    { authenticated: true, errors: ['VALIDATION_FAILED'] },
  );

  // The agent to take away: a zip streamed as it is written (export/export.ts), never whole in memory.
  table.add(
    'get',
    '/export',
    [
      async (req, res) => {
        const ctx = contextFor(req);
        if (!ctx.authorized) throw unauthorized('Missing or invalid agent secret', 'INVALID_AGENT_SECRET');
        const { config, store, tasks } = ctx.services;
        const zip = await exportZip({
          name: config.name,
          workspace: config.workspace,
          quotaBytes: config.workspaceQuotaBytes,
          sql: store.sql,
          tasks: () => tasks.store.list(),
        });
        const day = new Date().toISOString().slice(0, 10);
        res.writeHead(200, {
          'content-type': 'application/zip',
          'content-disposition': `attachment; filename="agent-export-${day}.zip"`,
          'cache-control': 'no-store',
        });
        await pipeline(zip, res).catch(() => res.destroy());
      },
    ],
    {
      ...fileBodyDoc('Export the agent: a zip of the workspace (up to its quota), every chat as JSONL (chats/), the tasks (tasks.json) and a manifest.json'),
    },
    { authenticated: true },
  );

  mountJsonProcedures(table, agentRouter, contextFor);

  let document: Promise<unknown> | undefined;
  table.add('get', '/openapi.json', [
    async (req, res) => {
      if (!contextFor(req).authorized) throw unauthorized('Missing or invalid agent secret', 'INVALID_AGENT_SECRET');
      document ??= openApiDocument(agentRouter, table, { title: 'Agent API', version: AGENT_VERSION, baseUrl: '/' });
      res.json(await document);
    },
  ]);
  mountApiDocs(table, 'Agent API');
  table.finish();
}
