/**
 * The REST face of the account → agent proxy: forwards a request to the user's agent and
 * streams the answer back — SSE, uploads and downloads pass through as they arrive, nothing is
 * buffered. The caller's credentials never reach the agent; the agent secret never reaches the
 * caller. A client that goes away cancels the upstream request.
 */
import http from 'node:http';
import https from 'node:https';
import type { Request, Response } from 'express';
import { RECONNECT } from '@contracts/agent/chat.js';
import { agentRouteAt, isAgentUpload, opensEventStream } from '@contracts/agent/routes.js';
import { AppError, notFound } from '../../../common/errors.js';
import { AccountRequest } from '../../request.js';
import type { AccountServices } from '../../services.js';
import { matchAgentRoute } from './agent-routes.js';
import { admitAgentRequest } from './guest-policy.js';
import type { AgentMetrics } from '../metrics.js';
import type { AgentEndpoint } from '../registry.js';
import { agentRequestTarget } from '../transport.js';

/** Headers that describe one hop, or carry the caller's credentials: never forwarded. */
const NOT_FORWARDED = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'authorization',
  'cookie',
  'set-cookie',
]);

function forwardable(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name, value]) => value !== undefined && !NOT_FORWARDED.has(name)));
}

export interface ForwardOptions {
  /** Path and query on the agent, starting with `/`. */
  path: string;
  /** Request bodies longer than this are cut off with 413. */
  maxBodyBytes: number;
  /** The agent's answer time and relayed event streams (GET /metrics). */
  metrics?: AgentMetrics;
  /** Aborted when this service stops: a relayed event stream then ends with `reconnect`. */
  shutdown?: AbortSignal;
}

/**
 * Ends a relayed event stream once `shutdown` aborts: at the next frame boundary (the bytes are
 * relayed as they come, so the stop may fall inside a frame), with a `reconnect` event, and
 * without `done`; the agent's run goes on and the client follows it again from its last event id.
 */
function endOnShutdown(answer: http.IncomingMessage, res: Response, upstream: http.ClientRequest, shutdown: AbortSignal): void {
  let tail = '';
  answer.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString('latin1')).slice(-2);
  });
  const stop = () => {
    answer.unpipe(res);
    const finish = () => {
      answer.off('data', relayRest);
      res.end(`data: ${JSON.stringify(RECONNECT)}\n\n`, () => upstream.destroy());
    };
    // Registered after the tail tracker, so `tail` already includes the chunk.
    const relayRest = (chunk: Buffer) => {
      res.write(chunk);
      if (tail === '\n\n') finish();
    };
    if (tail === '' || tail === '\n\n') finish();
    else {
      answer.on('data', relayRest);
      answer.resume();
    }
  };
  if (shutdown.aborted) {
    stop();
    return;
  }
  shutdown.addEventListener('abort', stop, { once: true });
  res.once('close', () => shutdown.removeEventListener('abort', stop));
}

export const agentUnreachable = () => new AppError(502, 'AGENT_UNREACHABLE', 'Your agent did not answer; try again in a moment');

export function forwardToAgent(req: Request, res: Response, agent: Pick<AgentEndpoint, 'url' | 'secret'>, opts: ForwardOptions): Promise<void> {
  const target = agentRequestTarget(agent.url);
  return new Promise<void>((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > opts.maxBodyBytes) return reject(new AppError(413, 'PAYLOAD_TOO_LARGE', `Request body is over ${opts.maxBodyBytes} bytes`));

    const upstream = (target.tls ? https : http).request({
      ...target.connect,
      method: req.method,
      // Built by concatenation, never URL resolution: a path like `//elsewhere` stays on the agent.
      path: opts.path,
      headers: { ...forwardable(req.headers), authorization: `Bearer ${agent.secret}`, 'x-request-id': req.id },
    });
    const sent = performance.now();
    let streamClosed: (() => void) | undefined;
    let settled = false;
    const settle = (error?: unknown) => {
      if (settled) return;
      settled = true;
      streamClosed?.();
      if (error) reject(error);
      else resolve();
    };

    upstream.on('response', (answer) => {
      if (res.headersSent) {
        // This service has answered already (408: the body did not arrive in time); the agent's
        // answer, most likely its own 408, has nowhere to go.
        upstream.destroy();
        settle();
        return;
      }
      opts.metrics?.proxied('rest', (performance.now() - sent) / 1000);
      const eventStream = String(answer.headers['content-type']).startsWith('text/event-stream');
      if (eventStream) streamClosed = opts.metrics?.streamOpened();
      res.status(answer.statusCode ?? 502);
      for (const [name, value] of Object.entries(forwardable(answer.headers))) if (value !== undefined) res.setHeader(name, value);
      res.flushHeaders();
      answer.pipe(res);
      if (eventStream && opts.shutdown) endOnShutdown(answer, res, upstream, opts.shutdown);
      answer.on('end', () => settle());
      answer.on('error', () => {
        res.destroy();
        settle();
      });
    });
    upstream.on('error', () => {
      if (res.headersSent) {
        res.destroy();
        settle();
      } else settle(agentUnreachable());
    });
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
      settle();
    });
    // A body cut short (the client left, or the shell's body timeout ended it) ends the agent's request too.
    req.once('close', () => {
      if (!req.complete) upstream.destroy();
    });

    let received = 0;
    req.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > opts.maxBodyBytes) {
        req.unpipe(upstream);
        upstream.destroy();
        settle(new AppError(413, 'PAYLOAD_TOO_LARGE', `Request body is over ${opts.maxBodyBytes} bytes`));
      }
    });
    req.pipe(upstream);
  });
}

/**
 * `/api/v1/agent/*` for one request: the caller (access token of a live session), the agent route
 * they name (only in its documented spelling: agent-routes.ts), the guest policy for that route,
 * their own agent, then the bytes both ways.
 */
/** What the REST proxy uses of the account's services. */
export type ProxyServices = Pick<
  AccountServices,
  'tokens' | 'streamSlots' | 'requestSlots' | 'rateLimits' | 'modelBudget' | 'agents' | 'agentMetrics' | 'shutdown'
>;

export async function proxyToOwnAgent(services: ProxyServices, req: Request, res: Response, target: { path: string; pathname: string }): Promise<void> {
  const user = await services.tokens.authenticate(req.headers.authorization, { seen: new AccountRequest(req) });
  // Anything else (another case, a trailing or doubled slash, dot segments, an encoded letter or
  // slash, `;params`, the agent's own /trpc) never reaches the agent: its rules are the route's.
  const match = matchAgentRoute(req.method, target.pathname);
  if (!match) throw notFound('No such agent path', 'ROUTE_NOT_FOUND');
  if ('allowed' in match) {
    const allow = match.allowed.join(', ');
    throw new AppError(405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed here (allowed: ${allow})`, { Allow: allow });
  }
  // The slot first: a refused stream or request must not count a guest's message or start an agent.
  const row = agentRouteAt(match.route.method, match.route.path);
  const release = (row && opensEventStream(row) ? services.streamSlots : services.requestSlots).claim(user.userId);
  try {
    const { maxBodyBytes } = await admitAgentRequest(match.route, user, services.rateLimits, services.modelBudget);
    const agent = await services.agents.provisioner.agentFor(user.userId);
    await forwardToAgent(req, res, agent, { path: target.path, maxBodyBytes, metrics: services.agentMetrics, shutdown: services.shutdown });
    // The agent took the file (its answer relayed in full): one upload in the user's usage of the day.
    if (isAgentUpload(match.route.method, match.route.path) && res.statusCode < 300) await services.modelBudget.countActivity(user.userId, 'upload');
  } finally {
    release();
  }
}
