/**
 * The only way out of an agent's sandbox. Each local agent gets its own gateway socket; a request
 * on it names its destination in the Host header (always with a port, server/agent/net/egress.ts)
 * and is forwarded only when that origin is on the allowlist the configuration implies: the
 * model provider of MODEL, Telegram's API root, and the hosts of AGENT_EGRESS_ALLOW. The
 * operator's provider keys live here, not in the sandbox: the gateway sets them on the way out
 * and drops whatever credentials the agent sent for that origin. Everything else gets 403
 * EGRESS_DENIED. Answers stream back as they arrive (model streams, Telegram long polls).
 *
 * With AGENT_EXEC_NETWORK=allowlist, exec commands reach the same gateway through the agent's
 * relay (server/agent/net/exec-relay.ts) as through an HTTP proxy: absolute-form requests
 * (`GET http://host/path`) and CONNECT tunnels (https) to allow-listed hosts; nothing else.
 *
 * Calls to the model are metered (model-usage.ts): refused with 429 while the owner's daily
 * budget is spent, and their token usage is read from the answer as it passes and recorded.
 */
import { rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { AppError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { parseModelSpec } from '@contracts/agent/model-spec.js';
import { UsageScanner, type TokenUsage } from './model-usage.js';

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
}

/** The budget the gateway holds model calls against (model-usage.ts), and where call times go (metrics). */
export interface ModelMeter {
  check(userId: string): Promise<{ guest: boolean }>;
  record(userId: string, usage: TokenUsage, guest?: boolean): Promise<void>;
  /** A metered call ended: its duration and HTTP status (0: no answer). */
  observe?(seconds: number, status: number): void;
}

export interface EgressSettings {
  model?: string;
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
  const spec = settings.model ? parseModelSpec(settings.model) : undefined;
  if (spec?.provider === 'openai-compatible') add(spec.baseURL, bearer(settings.modelApiKey), true);
  if (spec?.provider === 'openai') add(settings.openaiBaseUrl ?? 'https://api.openai.com', bearer(settings.openaiApiKey), true);
  if (spec?.provider === 'anthropic')
    add(settings.anthropicBaseUrl ?? 'https://api.anthropic.com', settings.anthropicApiKey ? { 'x-api-key': settings.anthropicApiKey } : {}, true);
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
]);
const CREDENTIALS = new Set(['authorization', 'x-api-key', 'cookie']);

function forwarded(headers: http.IncomingHttpHeaders, dropCredentials: boolean): http.OutgoingHttpHeaders {
  return Object.fromEntries(
    Object.entries(headers).filter(([name, value]) => value !== undefined && !HOP_BY_HOP.has(name) && !(dropCredentials && CREDENTIALS.has(name))),
  );
}

function deny(res: http.ServerResponse, status: number, code: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code, message } }));
}

export interface OpenGateway {
  close(): Promise<void>;
}

export class EgressGateway {
  private readonly routes = new Map<string, EgressRoute>();

  constructor(
    routes: EgressRoute[],
    private readonly log: Logger,
    private readonly meter?: ModelMeter,
  ) {
    // First route wins: the model's credentials are not replaced by an AGENT_EGRESS_ALLOW entry for the same origin.
    for (const route of routes) if (!this.routes.has(hostKey(route.origin))) this.routes.set(hostKey(route.origin), route);
  }

  /** The allowed origins, for logs and docs. */
  get origins(): string[] {
    return [...this.routes.values()].map((route) => route.origin.origin);
  }

  /** Serves one agent's gateway on `socketPath` until closed. */
  async open(socketPath: string, owner: GatewayOwner): Promise<OpenGateway> {
    rmSync(socketPath, { force: true });
    const server = http.createServer((req, res) => void this.forward(req, res, owner));
    server.on('connect', (req: http.IncomingMessage, client: Duplex, head: Buffer) => this.tunnel(req, client, head, owner));
    server.requestTimeout = 0; // long polls and model streams
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => resolve());
    });
    return {
      close: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    };
  }

  /** The allowed route for `host:port` (port 80 when missing). */
  private routeFor(hostPort: string): EgressRoute | undefined {
    const host = hostPort.toLowerCase();
    return this.routes.get(host.includes(':') ? host : `${host}:80`);
  }

  /** CONNECT host:port: a raw tunnel to an allow-listed host, no credentials added (TLS is end to end). */
  private tunnel(req: http.IncomingMessage, client: Duplex, head: Buffer, owner: GatewayOwner): void {
    const target = req.url ?? '';
    const route = /^[^\s/]+:\d+$/.test(target) ? this.routeFor(target) : undefined;
    if (!route) {
      this.log.warn({ agentId: owner.agentId, host: target, method: 'CONNECT' }, 'egress refused: host not on the allowlist');
      client.end("HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nEGRESS_DENIED: not on this service's egress allowlist\n");
      return;
    }
    const upstream = net.connect(Number(route.origin.port || (route.origin.protocol === 'https:' ? 443 : 80)), route.origin.hostname, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    client.on('close', () => upstream.destroy());
  }

  private async forward(req: http.IncomingMessage, res: http.ServerResponse, owner: GatewayOwner): Promise<void> {
    const { agentId } = owner;
    // Origin form from the agent itself (destination in Host); absolute form from exec's proxy clients.
    const absolute = req.url && !req.url.startsWith('/') ? URL.parse(req.url) : null;
    const host = absolute ? `${absolute.hostname}:${absolute.port || (absolute.protocol === 'https:' ? 443 : 80)}` : (req.headers.host ?? '');
    const path = absolute ? `${absolute.pathname}${absolute.search}` : req.url;
    const route = this.routeFor(host);
    if (!route || !path?.startsWith('/') || (absolute && absolute.protocol !== 'http:')) {
      this.log.warn({ agentId, host, method: req.method }, 'egress refused: host not on the allowlist');
      return deny(res, 403, 'EGRESS_DENIED', `${host || 'This host'} is not on this service's egress allowlist`);
    }
    const { origin, credentials } = route;
    const metered =
      route.model && owner.userId && this.meter ? { userId: owner.userId, meter: this.meter, guest: undefined as boolean | undefined } : undefined;
    if (metered) {
      try {
        metered.guest = (await metered.meter.check(metered.userId)).guest;
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
    if (metered) res.once('close', () => metered.meter.observe?.((performance.now() - started) / 1000, status));
    const upstream = (origin.protocol === 'https:' ? https : http).request({
      protocol: origin.protocol,
      hostname: origin.hostname,
      port: origin.port || undefined,
      method: req.method,
      path,
      headers: { ...forwarded(req.headers, dropCredentials), host: origin.host, ...credentials },
    });
    upstream.on('response', (answer) => {
      status = answer.statusCode ?? 502;
      res.writeHead(status, forwarded(answer.headers, false));
      if (metered && (answer.statusCode ?? 0) < 300) {
        const scanner = new UsageScanner();
        answer.on('data', (chunk: Buffer) => scanner.push(chunk));
        // Recorded when the answer is complete, or as far as it came when the agent stopped reading.
        answer.once('close', () => {
          metered.meter
            .record(metered.userId, scanner.end(), metered.guest)
            .catch((error: unknown) => this.log.error({ err: error, agentId }, 'recording model usage failed'));
        });
      }
      answer.pipe(res);
      answer.on('error', () => res.destroy());
    });
    upstream.on('error', (error) => {
      if (res.headersSent) return void res.destroy();
      this.log.warn({ agentId, origin: origin.origin, err: error }, 'egress upstream failed');
      deny(res, 502, 'EGRESS_UPSTREAM_FAILED', `${origin.host} did not answer`);
    });
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  }
}
