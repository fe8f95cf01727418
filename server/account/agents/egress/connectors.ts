/**
 * The gateway's answers about the owner's connectors (contracts/agent/connectors.ts): on its own
 * host, `GET /connectors/tools` lists the tools the agent may offer the model and
 * `POST /connectors/call` makes one call. The calls themselves are the connectors area's
 * (server/account/connectors/), which holds the tokens and adds them to the request it sends to the
 * MCP server: what comes back to the agent is the tool's result, never a credential. Only the
 * agent's own socket asks (not exec's relay), and only for its claimed owner.
 */
import type http from 'node:http';
import {
  ConnectorCall,
  GATEWAY_CONNECTOR_CALL_PATH,
  GATEWAY_CONNECTOR_TOOLS_PATH,
  type ConnectorCallResult,
  type ConnectorTool,
} from '@contracts/agent/connectors.js';

/** What the gateway asks of the connectors area (bound in services.ts; agents/ imports nothing of it). */
export interface ConnectorCalls {
  tools(userId: string): Promise<ConnectorTool[]>;
  call(userId: string, call: ConnectorCall, signal: AbortSignal): Promise<ConnectorCallResult>;
}

/** A call's arguments are at most this large (the model wrote them). */
const MAX_CALL_BYTES = 1024 * 1024;

export const isConnectorPath = (path: string | undefined): boolean => path === GATEWAY_CONNECTOR_TOOLS_PATH || path === GATEWAY_CONNECTOR_CALL_PATH;

function answer(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

function refuse(res: http.ServerResponse, status: number, code: string, message: string): void {
  answer(res, status, { error: { code, message } });
}

/** Answers one connector request of an agent whose owner is `userId`. */
export async function answerConnectors(req: http.IncomingMessage, res: http.ServerResponse, userId: string, calls: ConnectorCalls | undefined): Promise<void> {
  const path = req.url?.split('?')[0];
  if (req.method === 'GET' && path === GATEWAY_CONNECTOR_TOOLS_PATH) return answer(res, 200, { tools: calls ? await calls.tools(userId) : [] });
  if (req.method !== 'POST' || path !== GATEWAY_CONNECTOR_CALL_PATH) return refuse(res, 404, 'ROUTE_NOT_FOUND', 'No such connector path');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_CALL_BYTES) {
      res.shouldKeepAlive = false;
      return refuse(res, 413, 'EGRESS_BODY_TOO_LARGE', `A connector call's arguments are limited to ${MAX_CALL_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  let parsed: ConnectorCall;
  try {
    parsed = ConnectorCall.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
  } catch {
    return refuse(res, 400, 'BAD_REQUEST', 'A connector call is {name, arguments}');
  }
  if (!calls) return answer(res, 200, { content: [{ type: 'text', text: 'This service has no connectors' }], is_error: true } satisfies ConnectorCallResult);
  // The agent hanging up (its run stopped) stops the call.
  const stop = new AbortController();
  res.once('close', () => stop.abort());
  const result = await calls.call(userId, parsed, stop.signal);
  if (!res.destroyed) answer(res, 200, result);
}
