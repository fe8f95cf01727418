/**
 * Prometheus metrics (`GET /metrics`, text format) for both services: the process (event loop
 * lag, memory, GC, from prom-client's defaults) and every HTTP request by route template — the
 * route a request matched as written in the code (`/chat/{chat_id}/history`, `/trpc/chat.send`),
 * never the raw path, so no id, token or probe an attacker sends becomes a label.
 *
 * Who may scrape: with METRICS_TOKEN set, callers with `Authorization: Bearer <token>`; without
 * it, only loopback callers that came through no proxy (a local reverse proxy adds
 * X-Forwarded-For or Forwarded, and then the caller is really someone else). A service may admit
 * one more credential (an agent: its own secret, which the account service scrapes it with).
 * A caller that asks for `Accept: application/json` gets prom-client's JSON (what
 * AggregatorRegistry sums); text stays the default, whatever else Accept lists.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { AGENT_SERIES } from '@contracts/agent/metrics.js';
import type { ErrorCode } from '@contracts/errors.js';
import { AppError, mapError } from './errors.js';
import { cameFromThisMachine } from './net.js';

export interface ServiceMetrics {
  registry: Registry;
  /** Seconds from the request's arrival to the end of its answer (a stream: to its end). */
  httpDuration: Histogram<'method' | 'route' | 'status'>;
  /** Server-sent event streams open now: chat replies (on the account service, those it relays). */
  sseStreams: Gauge;
}

/**
 * How often prom-client's event-loop delay sampler wakes the loop (ms). Its default, 10 ms, is 100
 * wake-ups a second: an agent with nothing to do spent about 5 ms of CPU a second on them (0.5 % of
 * a core per idle agent, measured with 12 running), and a host runs many agents that mostly
 * wait. At 500 ms a block of the loop longer than that is still always seen; shorter ones are
 * sampled. The account service is one busy process and keeps the fine default.
 */
const EVENT_LOOP_SAMPLING_MS = { account: 10, agent: 500 } as const;

export function createMetrics(service: 'account' | 'agent'): ServiceMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLING_MS[service] });
  const httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP requests by method, route template and status class',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60],
    registers: [registry],
  });
  const sseStreams = new Gauge({ name: 'sse_streams_open', help: AGENT_SERIES.sse_streams_open.help, registers: [registry] });
  return { registry, httpDuration, sseStreams };
}

/** The route template a request matched: what a route table set, else express's matched route. */
export function routeLabel(req: Request, res: Response): string {
  const label = (res.locals as { route?: string }).route;
  if (label) return label;
  const route = req.route as { path?: unknown } | undefined;
  return typeof route?.path === 'string' ? `${req.baseUrl}${route.path}` : 'unmatched';
}

/** Known HTTP methods stay labels; anything else is one bucket (a method is attacker-chosen). */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export const methodLabel = (method: string): string => (METHODS.has(method) ? method : 'OTHER');

export function observeRequest(metrics: ServiceMetrics, req: Request, res: Response, seconds: number): void {
  metrics.httpDuration.observe({ method: methodLabel(req.method), route: routeLabel(req, res), status: `${Math.floor(res.statusCode / 100)}xx` }, seconds);
}

const digest = (value: string) => createHash('sha256').update(value).digest();

export interface MetricsEndpointOptions {
  /** A credential admitted besides METRICS_TOKEN and loopback. */
  admits?: (req: Request) => boolean;
  /** More series in Prometheus text, appended after the registry's own (the account: its agents'). */
  more?: () => Promise<string>;
}

export function metricsEndpoint(metrics: ServiceMetrics, token: string | undefined, options: MetricsEndpointOptions = {}): RequestHandler {
  const expected = token ? digest(token) : undefined;
  return async (req, res) => {
    const refuse = (status: number, code: ErrorCode, detail: string) => {
      const { body } = mapError(new AppError(status, code, detail));
      res.status(status).json(body);
    };
    if (!options.admits?.(req)) {
      if (expected) {
        const presented = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
        if (!presented || !timingSafeEqual(digest(presented), expected))
          return refuse(401, 'UNAUTHORIZED', 'Metrics need Authorization: Bearer <METRICS_TOKEN>');
      } else if (!cameFromThisMachine(req)) {
        return refuse(403, 'FORBIDDEN', 'Metrics are served to loopback callers only (set METRICS_TOKEN to scrape from elsewhere)');
      }
    }
    res.setHeader('Cache-Control', 'no-store');
    if (req.accepts(['text/plain', 'application/json']) === 'application/json') {
      res.json(await metrics.registry.getMetricsAsJSON());
      return;
    }
    const [own, more] = await Promise.all([metrics.registry.metrics(), options.more?.() ?? '']);
    res.setHeader('Content-Type', metrics.registry.contentType);
    res.end(more ? `${own}\n${more}` : own);
  };
}
