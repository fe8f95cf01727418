/**
 * The only way out of an agent's sandbox. Each local agent gets its own gateway socket; a request
 * on it names its destination in the Host header (always with a port, server/agent/net/egress.ts)
 * and is forwarded only when that origin is on the allowlist the configuration implies: the
 * model provider of MODEL, Telegram's API root, and the hosts of AGENT_EGRESS_ALLOW. The
 * operator's provider keys live here, not in the sandbox: the gateway sets them on the way out
 * and drops whatever credentials the agent sent for that origin. Everything else gets 403
 * EGRESS_DENIED. The model origin answers only its metered generation calls (model-routes.ts);
 * any other method or path there gets 403 EGRESS_ROUTE_REFUSED, so the key opens nothing else. Answers stream back as they arrive (model streams, Telegram long polls).
 *
 * With AGENT_EXEC_NETWORK=allowlist, exec commands reach the gateway through the agent's relay
 * (server/agent/net/exec-relay.ts) as through an HTTP proxy: absolute-form requests
 * (`GET http://host/path`) and CONNECT tunnels (https) to allow-listed hosts other than the model's
 * (a tunnel cannot be metered; model calls take the plain path); nothing else. The
 * relay has a socket of its own, and on it the gateway adds no credentials: a command that asks
 * for the model host gets the operator's key neither used on its behalf nor echoed back.
 *
 * Agents in Kubernetes pods (provisioners/kubernetes/) share one TCP address instead
 * (`listenTcp`, KUBE_EGRESS_PORT): each request names its agent by the token in
 * `Proxy-Authorization` (`Bearer <agent id>.<HMAC of the agent id under its secret>`), checked
 * before anything else is read; a request without a valid one gets 407 EGRESS_UNAUTHENTICATED.
 * The pods' NetworkPolicy lets them reach this address and DNS, nothing else.
 *
 * Each agent's tunnels and requests are bounded (EgressLimits): how many at once, how long idle,
 * how long in all, and how large a plain request body; past a bound the gateway refuses (503,
 * 413) or cuts the connection, so a hostile tenant cannot hold the account service's sockets,
 * memory or upstream connections.
 *
 * On its own host (`GATEWAY_SELF_HOST`) the gateway answers for itself: the budget check, and the
 * agents' web tools (web.ts: `web_fetch` and `web_search`, fetched here under the address rules
 * so the agent never opens a connection of its own).
 *
 * Calls to the model are metered (model-usage.ts): each reserves what it may cost before it is
 * forwarded (refused with 429 while the owner's daily budget is spent or held by calls in flight),
 * and settles with the usage read from its answer as it passes.
 */
import { rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { AppError } from '../../../common/errors.js';
import type { Logger } from '../../../common/log.js';
import { parseModelSpec } from '@contracts/agent/model-spec.js';
import type { ErrorCode } from '@contracts/errors.js';
import { generationEndpoint } from './model-routes.js';
import { GATEWAY_BUDGET_PATH, GATEWAY_SELF_HOST, MODEL_SOURCE_HEADER, ModelSource, type ProactiveBudget } from '@contracts/agent/model-source.js';
import { modelCall, UsageScanner, type ModelCall, type TokenUsage } from './model-usage.js';
import { answerConnectors, isConnectorPath, type ConnectorCalls } from './connectors.js';
import type { WebTools } from './web.js';

export interface EgressRoute {
  /** `https://api.openai.com`, `http://127.0.0.1:11434` … */
  origin: URL;
  /** Set on every request to this origin, replacing any the agent sent. */
  credentials: Record<string, string>;
  /** The model provider: calls are metered against the owner's budget. */
  model?: boolean;
}

/** Who an agent's gateway serves. */
export interface GatewayOwner {
  agentId: string;
  userId?: string;
  /**
   * A pre-started agent of the warm pool that no user has claimed yet: it has no budget to meter
   * against and nothing to do, so it reaches nothing. Claiming sets `userId` and clears this.
   */
  unclaimed?: boolean;
}

const UNCLAIMED_DETAIL = 'This agent belongs to no user yet: it reaches nothing until one claims it';

/** The budget the gateway holds model calls against (model-usage.ts), and where call times go (metrics). */
export interface ModelMeter {
  /** Admits one call that may cost `tokens` (an AppError 429 when the budget is spent or held), until it settles; counted by `source`. */
  reserve(userId: string, tokens: number, source: ModelSource): Promise<{ settle(usage: TokenUsage): Promise<void> }>;
  /** Whether a proactive turn may start: a call of `tokens` fits whole under the user's ceilings. */
  proactive?(userId: string, tokens: number): Promise<ProactiveBudget>;
  /** A metered call ended: its duration and HTTP status (0: no answer). */
  observe?(seconds: number, status: number): void;
}

/** Bounds on one agent's traffic through its gateway (AGENT_EGRESS_* settings). */
export interface EgressLimits {
  /** Tunnels and forwarded requests in flight at once, both sockets together; more get 503 EGRESS_BUSY. */
  maxConnections: number;
  /** A tunnel or request with no byte either way for this long is cut. */
  idleTimeoutMs: number;
  /** A tunnel or request is cut after this long, however busy. */
  maxDurationMs: number;
  /** A plain-HTTP request body larger than this gets 413 EGRESS_BODY_TOO_LARGE. */
  maxBodyBytes: number;
}

/** Which bound a tunnel or request ran into, for metrics. */
export type EgressLimit = 'connections' | 'body' | 'idle' | 'duration';

export interface EgressGatewayOptions {
  /** The configuration's (server/account/config.ts `egressLimits`), where the defaults live. */
  limits: EgressLimits;
  meter?: ModelMeter;
  /** MODEL_CALL_MAX_TOKENS: the output ceiling set on a metered generation request that names none. */
  modelCallMaxTokens?: number;
  /** Each refusal or cut by a limit. */
  onLimited?: (limit: EgressLimit) => void;
  /** The owners' connector tools and calls (connectors.ts); unset: none. */
  connectors?: ConnectorCalls;
  /** The agents' web tools, answered on the gateway's own host (web.ts); unset: not offered. */
  web?: WebTools;
}

/** One agent's gateway sockets: its own (credentials added) and, with AGENT_EXEC_NETWORK=allowlist, its exec relay's (none added). */
export interface GatewaySockets {
  agent: string;
  exec?: string;
}

export interface EgressSettings {
  model?: string;
  heartbeatModel?: string;
  taskModel?: string;
  modelApiKey?: string;
  openaiApiKey?: string;
  openaiBaseUrl?: string;
  anthropicApiKey?: string;
  anthropicBaseUrl?: string;
  telegramApiRoot: string;
  /** AGENT_EGRESS_ALLOW: hosts (https) or origins. */
  allow: string[];
}

const bearer = (key: string | undefined): Record<string, string> => (key ? { authorization: `Bearer ${key}` } : {});

/** The allowlist and the credentials each origin gets, from the configuration. */
export function egressRoutes(settings: EgressSettings): EgressRoute[] {
  const routes: EgressRoute[] = [];
  const add = (origin: string, credentials: Record<string, string> = {}, model = false) =>
    routes.push({ origin: new URL(new URL(origin).origin), credentials, model });
  // The chat's model, and the cheaper ones heartbeats and tasks may run on (HEARTBEAT_MODEL, TASK_MODEL).
  for (const model of [settings.model, settings.heartbeatModel, settings.taskModel]) {
    const spec = model ? parseModelSpec(model) : undefined;
    if (spec?.provider === 'openai-compatible') add(spec.baseURL, bearer(settings.modelApiKey), true);
    if (spec?.provider === 'openai') add(settings.openaiBaseUrl ?? 'https://api.openai.com', bearer(settings.openaiApiKey), true);
    if (spec?.provider === 'anthropic')
      add(settings.anthropicBaseUrl ?? 'https://api.anthropic.com', settings.anthropicApiKey ? { 'x-api-key': settings.anthropicApiKey } : {}, true);
  }
  add(settings.telegramApiRoot);
  for (const entry of settings.allow) add(entry.includes('://') ? entry : `https://${entry}`);
  return routes;
}

/**
 * The model and Telegram settings a local agent gets: the same ones the routes above were made
 * from, so what an agent calls is always what its gateway allows (keys stay out).
 */
export function agentModelEnvironment(settings: EgressSettings): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { TELEGRAM_API_ROOT: settings.telegramApiRoot };
  if (settings.model) env.MODEL = settings.model;
  if (settings.heartbeatModel) env.HEARTBEAT_MODEL = settings.heartbeatModel;
  if (settings.taskModel) env.TASK_MODEL = settings.taskModel;
  if (settings.openaiBaseUrl) env.OPENAI_BASE_URL = settings.openaiBaseUrl;
  if (settings.anthropicBaseUrl) env.ANTHROPIC_BASE_URL = settings.anthropicBaseUrl;
  return env;
}

/** `host:port` as the agent sends it, for an origin. */
function hostKey(origin: URL): string {
  const port = origin.port || (origin.protocol === 'https:' ? '443' : '80');
  return `${origin.hostname}:${port}`.toLowerCase();
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  // For the gateway's meter only (contracts/agent/model-source.ts); never sent on.
  MODEL_SOURCE_HEADER,
]);
const CREDENTIALS = new Set(['authorization', 'x-api-key', 'cookie']);

function forwarded(headers: http.IncomingHttpHeaders, dropCredentials: boolean): http.OutgoingHttpHeaders {
  return Object.fromEntries(
    Object.entries(headers).filter(([name, value]) => value !== undefined && !HOP_BY_HOP.has(name) && !(dropCredentials && CREDENTIALS.has(name))),
  );
}

function deny(res: http.ServerResponse, status: number, code: ErrorCode, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code, message } }));
}

export interface OpenGateway {
  close(): Promise<void>;
}

/** What a request came in on: the agent's own socket, or its exec relay's. */
interface Caller {
  owner: GatewayOwner;
  exec: boolean;
  slots: Slots;
}

/** One agent's tunnels and requests in flight, counted across both of its sockets. */
class Slots {
  private active = 0;
  /** A hostile tenant can hit the cap in a loop: the log says so once per agent, metrics count each. */
  warned = false;

  constructor(private readonly max: number) {}

  take(): boolean {
    if (this.active >= this.max) return false;
    this.active++;
    return true;
  }

  /** A release for one taken slot, safe to call more than once. */
  releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
    };
  }
}

export class EgressGateway {
  private readonly routes = new Map<string, EgressRoute>();
  private readonly meter?: ModelMeter;
  private readonly modelCallMaxTokens: number;
  private readonly limits: EgressLimits;
  private readonly onLimited: (limit: EgressLimit) => void;
  private readonly connectors?: ConnectorCalls;
  private readonly web?: WebTools;

  constructor(
    routes: EgressRoute[],
    private readonly log: Logger,
    options: EgressGatewayOptions,
  ) {
    this.meter = options.meter;
    this.modelCallMaxTokens = options.modelCallMaxTokens ?? 4096;
    this.limits = options.limits;
    this.onLimited = options.onLimited ?? (() => {});
    this.connectors = options.connectors;
    this.web = options.web;
    // First route wins: the model's credentials are not replaced by an AGENT_EGRESS_ALLOW entry for the same origin.
    for (const route of routes) if (!this.routes.has(hostKey(route.origin))) this.routes.set(hostKey(route.origin), route);
  }

  /** The allowed origins, for logs and docs. */
  get origins(): string[] {
    return [...this.routes.values()].map((route) => route.origin.origin);
  }

  /** Serves one agent's gateway on its sockets until closed. */
  async open(sockets: GatewaySockets, owner: GatewayOwner): Promise<OpenGateway> {
    const slots = new Slots(this.limits.maxConnections);
    const servers = [await this.serve(sockets.agent, () => ({ owner, exec: false, slots }))];
    try {
      if (sockets.exec) servers.push(await this.serve(sockets.exec, () => ({ owner, exec: true, slots })));
    } catch (error) {
      await closeServer(servers[0] as http.Server);
      throw error;
    }
    return { close: async () => void (await Promise.all(servers.map(closeServer))) };
  }

  /**
   * Serves the agents of pods on one TCP address until closed: `authenticate` tells whose a
   * `Proxy-Authorization` token is (undefined: nobody's). An agent's bounds hold across all its
   * connections, as on its own socket.
   */
  async listenTcp(
    address: { host: string; port: number },
    authenticate: (token: string) => Promise<GatewayOwner | undefined>,
  ): Promise<OpenGateway & { port: number }> {
    const slots = new Map<string, Slots>();
    const callerOf = async (req: http.IncomingMessage): Promise<Caller | undefined> => {
      const token = /^Bearer ([\w.-]{1,200})$/.exec(req.headers['proxy-authorization'] ?? '')?.[1];
      const owner = token ? await authenticate(token).catch(() => undefined) : undefined;
      if (!owner) return undefined;
      let agentSlots = slots.get(owner.agentId);
      if (!agentSlots) slots.set(owner.agentId, (agentSlots = new Slots(this.limits.maxConnections)));
      return { owner, exec: false, slots: agentSlots };
    };
    const server = await this.serve(address, callerOf);
    const port = (server.address() as net.AddressInfo).port;
    return { port, close: () => closeServer(server) };
  }

  /** A gateway server on a socket path or TCP address; `callerOf` says who each request comes from (undefined: refused, 407). */
  private async serve(
    where: string | { host: string; port: number },
    callerOf: (req: http.IncomingMessage) => Caller | undefined | Promise<Caller | undefined>,
  ): Promise<http.Server> {
    if (typeof where === 'string') rmSync(where, { force: true });
    const server = http.createServer(async (req, res) => {
      const caller = await callerOf(req);
      if (!caller) return deny(res, 407, 'EGRESS_UNAUTHENTICATED', 'This gateway serves agents that present their own token');
      await this.forward(req, res, caller);
    });
    server.on('connect', async (req: http.IncomingMessage, client: Duplex, head: Buffer) => {
      const caller = await callerOf(req);
      if (!caller)
        return void client.end('HTTP/1.1 407 Proxy Authentication Required\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nEGRESS_UNAUTHENTICATED\n');
      this.tunnel(req, client as net.Socket, head, caller);
    });
    // Long polls and model streams may take long in all, so no request timeout; silence is bounded instead.
    server.requestTimeout = 0;
    server.timeout = this.limits.idleTimeoutMs;
    server.on('timeout', (socket: net.Socket) => {
      this.onLimited('idle');
      socket.destroy();
    });
    // Raw connections of one agent's own socket too (a tunnel or request each, and as many idle
    // keep-alive ones). Not on the shared TCP address: there a cap on all connections would let
    // one pod shut out the others; each agent's slots bound it, and silence cuts idle ones.
    if (typeof where === 'string') server.maxConnections = 2 * this.limits.maxConnections;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      if (typeof where === 'string') server.listen(where, () => resolve());
      else server.listen(where.port, where.host, () => resolve());
    });
    return server;
  }

  /** A slot for one tunnel or request, or null when the agent has all it may have (logged once). */
  private slot(caller: Caller, host: string): (() => void) | null {
    if (caller.slots.take()) return caller.slots.releaser();
    this.onLimited('connections');
    if (!caller.slots.warned) {
      caller.slots.warned = true;
      this.log.warn(
        { agentId: caller.owner.agentId, host, max: this.limits.maxConnections },
        'egress refused: too many tunnels and requests at once (AGENT_EGRESS_MAX_CONNECTIONS); further refusals for this agent are only counted',
      );
    }
    return null;
  }

  /** The allowed route for `host:port` (port 80 when missing). */
  private routeFor(hostPort: string): EgressRoute | undefined {
    const host = hostPort.toLowerCase();
    return this.routes.get(host.includes(':') ? host : `${host}:80`);
  }

  /**
   * CONNECT host:port: a raw tunnel to an allow-listed host, no credentials added (TLS is end to
   * end). Never to the model host: what passes a tunnel cannot be read, so it could not be
   * metered; model calls take the plain path (`http://host:443/…` through the proxy), where they are.
   */
  private tunnel(req: http.IncomingMessage, client: net.Socket, head: Buffer, caller: Caller): void {
    const target = req.url ?? '';
    if (caller.owner.unclaimed) {
      client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nEGRESS_DENIED: ${UNCLAIMED_DETAIL}\n`);
      return;
    }
    const route = /^[^\s/]+:\d+$/.test(target) ? this.routeFor(target) : undefined;
    if (!route) {
      this.log.warn({ agentId: caller.owner.agentId, host: target, method: 'CONNECT' }, 'egress refused: host not on the allowlist');
      client.end("HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nEGRESS_DENIED: not on this service's egress allowlist\n");
      return;
    }
    if (route.model) {
      this.log.warn({ agentId: caller.owner.agentId, host: target, method: 'CONNECT' }, 'egress refused: no tunnel to the model host');
      client.end(
        `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nEGRESS_DENIED: no tunnel to the model host; send plain requests through the proxy (http://${target}/...), which are metered\n`,
      );
      return;
    }
    const release = this.slot(caller, target);
    if (!release) {
      client.end('HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nEGRESS_BUSY: too many connections at once\n');
      return;
    }
    const upstream = net.connect(Number(route.origin.port || (route.origin.protocol === 'https:' ? 443 : 80)), route.origin.hostname, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    // Every byte either way passes the client socket, so its timeout is the tunnel's idle time (connecting included).
    client.setTimeout(this.limits.idleTimeoutMs, () => {
      this.onLimited('idle');
      client.destroy();
    });
    const lifetime = setTimeout(() => {
      this.onLimited('duration');
      client.destroy();
    }, this.limits.maxDurationMs);
    upstream.on('error', () => client.destroy());
    upstream.on('close', () => client.destroy());
    client.on('error', () => upstream.destroy());
    client.on('close', () => {
      clearTimeout(lifetime);
      upstream.destroy();
      release();
    });
  }

  /**
   * `GET /budget?source=…` on the gateway's own host: whether the owner's budget has room for a
   * proactive turn now (contracts/agent/model-source.ts). Only the agent's own socket asks; the
   * answer is about its owner alone.
   */
  private async answerBudget(req: http.IncomingMessage, res: http.ServerResponse, owner: GatewayOwner): Promise<void> {
    const path = req.url?.split('?')[0];
    if (req.method !== 'GET' || path !== GATEWAY_BUDGET_PATH || !owner.userId) {
      return deny(res, 404, 'ROUTE_NOT_FOUND', `The gateway answers GET ${GATEWAY_BUDGET_PATH} for itself, nothing else`);
    }
    const now = new Date();
    const answer: ProactiveBudget = (await this.meter?.proactive?.(owner.userId, this.modelCallMaxTokens)) ?? {
      allowed: true,
      used: 0,
      limit: null,
      resets_at: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString(),
    };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  }

  /** A connector call or tool list (connectors.ts), holding one of the agent's slots while it runs. */
  private async answerConnectors(req: http.IncomingMessage, res: http.ServerResponse, caller: Caller, userId: string): Promise<void> {
    const release = this.slot(caller, GATEWAY_SELF_HOST);
    if (!release) return deny(res, 503, 'EGRESS_BUSY', 'Too many connections through the egress gateway at once');
    res.once('close', release);
    try {
      await answerConnectors(req, res, userId, this.connectors);
    } catch (error) {
      this.log.error({ err: error, agentId: caller.owner.agentId }, 'connector request failed');
      if (!res.headersSent) deny(res, 502, 'EGRESS_UPSTREAM_FAILED', 'The connector call failed');
      else res.destroy();
    }
  }

  /** `web_fetch` and `web_search` (web.ts), within the agent's slots like any request it sends out. */
  private async answerWeb(req: http.IncomingMessage, res: http.ServerResponse, caller: Caller): Promise<void> {
    const release = this.slot(caller, GATEWAY_SELF_HOST);
    if (!release) return deny(res, 503, 'EGRESS_BUSY', 'Too many connections through the egress gateway at once');
    res.once('close', release);
    await this.web?.answer(req, res, caller.owner.userId);
  }

  private async forward(req: http.IncomingMessage, res: http.ServerResponse, caller: Caller): Promise<void> {
    const { owner } = caller;
    const { agentId } = owner;
    if (owner.unclaimed) return deny(res, 403, 'EGRESS_DENIED', UNCLAIMED_DETAIL);
    if (!caller.exec && req.headers.host?.toLowerCase().replace(/:80$/, '') === GATEWAY_SELF_HOST) {
      if (owner.userId && isConnectorPath(req.url?.split('?')[0])) return this.answerConnectors(req, res, caller, owner.userId);
      if (this.web?.handles(req.url)) return this.answerWeb(req, res, caller);
      return this.answerBudget(req, res, owner);
    }
    // Origin form from the agent itself (destination in Host); absolute form from exec's proxy clients.
    const absolute = req.url && !req.url.startsWith('/') ? URL.parse(req.url) : null;
    const host = absolute ? `${absolute.hostname}:${absolute.port || (absolute.protocol === 'https:' ? 443 : 80)}` : (req.headers.host ?? '');
    const path = absolute ? `${absolute.pathname}${absolute.search}` : req.url;
    const route = this.routeFor(host);
    if (!route || !path?.startsWith('/') || (absolute && absolute.protocol !== 'http:')) {
      this.log.warn({ agentId, host, method: req.method }, 'egress refused: host not on the allowlist');
      return deny(res, 403, 'EGRESS_DENIED', `${host || 'This host'} is not on this service's egress allowlist`);
    }
    // The model origin answers only the generation calls the gateway meters (model-routes.ts), as
    // spelt: a proxy-form target is judged before URL parsing resolves its dot segments.
    const spelt = absolute ? req.url?.replace(/^[^:/?#]+:\/\/[^/?#]*/, '') : path;
    const endpoint = route.model ? generationEndpoint(req.method, spelt) : undefined;
    if (route.model && !endpoint) {
      this.log.warn({ agentId, host, method: req.method }, 'egress refused: not a generation call of the model');
      return deny(res, 403, 'EGRESS_ROUTE_REFUSED', `The model host answers only POST to its generation endpoints through this gateway`);
    }
    const { maxBodyBytes, maxDurationMs } = this.limits;
    if (Number(req.headers['content-length'] ?? 0) > maxBodyBytes) {
      this.onLimited('body');
      res.shouldKeepAlive = false;
      return deny(res, 413, 'EGRESS_BODY_TOO_LARGE', `Request bodies through the egress gateway are limited to ${maxBodyBytes} bytes`);
    }
    const release = this.slot(caller, host);
    if (!release) return deny(res, 503, 'EGRESS_BUSY', 'Too many connections through the egress gateway at once');
    const lifetime = setTimeout(() => {
      this.onLimited('duration');
      res.destroy();
    }, maxDurationMs);
    res.once('close', () => {
      clearTimeout(lifetime);
      release();
    });
    const { origin } = route;
    // The operator's keys only on a generation call of the agent's own client: exec's relay socket sends what the command sent.
    const credentials = caller.exec || !endpoint ? {} : route.credentials;
    const meter = endpoint && owner.userId ? this.meter : undefined;
    let call: ModelCall | undefined;
    let reservation: Awaited<ReturnType<ModelMeter['reserve']>> | undefined;
    if (meter && endpoint && owner.userId) {
      // A metered call is read whole first: its output ceiling decides what it reserves (model-usage.ts).
      const body = await readBody(req, maxBodyBytes);
      if (res.destroyed) return;
      if (body === 'too-large') {
        this.onLimited('body');
        res.shouldKeepAlive = false;
        return deny(res, 413, 'EGRESS_BODY_TOO_LARGE', `Request bodies through the egress gateway are limited to ${maxBodyBytes} bytes`);
      }
      const encoded = (req.headers['content-encoding'] ?? 'identity') !== 'identity';
      call = encoded ? undefined : modelCall(endpoint, body, this.modelCallMaxTokens);
      if (!call) return deny(res, 403, 'EGRESS_DENIED', 'A model request the gateway cannot read (not a plain JSON object) is not forwarded');
      try {
        // What the call is for, as the agent says: it sorts the user's own spending (a false one moves no budget).
        const source = ModelSource.safeParse(req.headers[MODEL_SOURCE_HEADER]).data ?? 'chat';
        reservation = await meter.reserve(owner.userId, call.reserve, source);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        // OpenAI's shape for a spent quota, which clients know not to retry.
        res.writeHead(error.status, { 'content-type': 'application/json', ...error.headers });
        res.end(JSON.stringify({ error: { message: `${error.appCode}: ${error.message}`, type: 'insufficient_quota', code: error.appCode } }));
        return;
      }
    }
    const dropCredentials = Object.keys(credentials).length > 0;
    const started = performance.now();
    let status = 0;
    if (meter) res.once('close', () => meter.observe?.((performance.now() - started) / 1000, status));
    const headers = { ...forwarded(req.headers, dropCredentials), host: origin.host, ...credentials };
    if (call) headers['content-length'] = String(call.body.length);
    const upstream = (origin.protocol === 'https:' ? https : http).request({
      protocol: origin.protocol,
      hostname: origin.hostname,
      port: origin.port || undefined,
      method: req.method,
      path,
      headers,
    });
    // Settled once: with the usage the answer reported; with the call's estimate when it was sent
    // and answered (or cut) without any the gateway could read; with nothing when it never left or
    // was refused upstream. So a call the model may have run is never free.
    let sent = false;
    let answered: http.IncomingMessage | undefined;
    const scanner = new UsageScanner();
    const settle = () => {
      if (!reservation || !call) return;
      const read = scanner.end();
      const ok = status === 0 || (status >= 200 && status < 300);
      const usage = read.tokensIn + read.tokensOut > 0 ? read : sent && ok ? call.estimate : { tokensIn: 0, tokensOut: 0 };
      reservation.settle(usage).catch((error: unknown) => this.log.error({ err: error, agentId }, 'recording model usage failed'));
      reservation = undefined;
    };
    upstream.once('finish', () => (sent = true));
    upstream.on('response', (answer) => {
      answered = answer;
      status = answer.statusCode ?? 502;
      res.writeHead(status, forwarded(answer.headers, false));
      if (reservation) {
        answer.on('data', (chunk: Buffer) => scanner.push(chunk));
        // Recorded when the answer is complete, or as far as it came when the agent stopped reading.
        answer.once('close', settle);
      }
      answer.pipe(res);
      answer.on('error', () => res.destroy());
    });
    upstream.on('error', (error) => {
      if (!answered) settle();
      // Ended already: refused for its body size, and that answer must still get out.
      if (res.writableEnded) return;
      if (res.headersSent) return void res.destroy();
      this.log.warn({ agentId, origin: origin.origin, err: error }, 'egress upstream failed');
      deny(res, 502, 'EGRESS_UPSTREAM_FAILED', `${origin.host} did not answer`);
    });
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
      if (!answered) settle();
    });
    if (call) {
      upstream.end(call.body);
      return;
    }
    // A body without (or beyond) its declared length is counted as it streams.
    let bodyBytes = 0;
    req.on('data', (chunk: Buffer) => {
      bodyBytes += chunk.length;
      if (bodyBytes <= maxBodyBytes || upstream.destroyed) return;
      this.onLimited('body');
      req.unpipe(upstream);
      upstream.destroy();
      if (res.headersSent) return void res.destroy();
      res.shouldKeepAlive = false;
      deny(res, 413, 'EGRESS_BODY_TOO_LARGE', `Request bodies through the egress gateway are limited to ${maxBodyBytes} bytes`);
    });
    req.pipe(upstream);
  }
}

/** A request body in full, or 'too-large' past `max` bytes (what came is dropped). */
function readBody(req: http.IncomingMessage, max: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        chunks.length = 0;
        req.removeAllListeners('data');
        req.resume();
        resolve('too-large');
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('close', () => resolve(Buffer.concat(chunks)));
  });
}

function closeServer(server: http.Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
