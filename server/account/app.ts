/**
 * The account service's HTTP server: tRPC at /trpc, the documented REST paths under /api/v1
 * (rest-bridge/), JWKS at /.well-known/jwks.json, and the shared express shell.
 */
import express from 'express';
import { isAgentUpload } from '@contracts/agent/routes.js';
import { mountAccountBridge } from './rest-routes.js';
import { corsFor, createHttpApp, finishHttpApp, listen, trpcEndpoint } from '../common/http.js';
import { mountHealthRoutes } from '../common/health.js';
import { metricsEndpoint } from '../common/metrics.js';
import { createLogger, type Logger } from '../common/log.js';
import { startTracing } from '../common/tracing.js';
import { mountDevOutbox } from './auth/email/dev-outbox.js';
import type { AccountConfig } from './config.js';
import { accountRouter } from './router.js';
import { AccountRequest } from './request.js';
import { createAccountServices, type AccountServices } from './services.js';
import type { AccountContext } from './trpc.js';
import { serveWebClient } from './web.js';

/** Where the account API's REST paths are served (spec: "Account API"). */
const API_PREFIX = '/api/v1';

export interface RunningAccount {
  url: string;
  services: AccountServices;
  close(): Promise<void>;
}

export async function startAccount(config: AccountConfig, log: Logger = createLogger('account', config.logLevel, config.logPretty)): Promise<RunningAccount> {
  const services = await createAccountServices(config, log);
  const { metrics } = services;
  const tracing = config.otlpEndpoint ? await startTracing(config.otlpEndpoint, 'account', log) : undefined;
  const app = createHttpApp(log, {
    trustProxy: config.trustProxy,
    metrics,
    tracing,
    bodyTimeouts: {
      deadlineMs: config.bodyTimeouts.requestSeconds * 1000,
      uploadIdleMs: config.bodyTimeouts.uploadIdleSeconds * 1000,
      // Uploads to the user's agent, piped through (agents/proxy/http-proxy.ts).
      isUpload: (req) => req.path.startsWith(`${API_PREFIX}/agent/`) && isAgentUpload(req.method, req.path.slice(`${API_PREFIX}/agent`.length)),
    },
  });
  // The web client on another origin (FRONTEND_URL) may call the APIs; no other origin may.
  const frontendOrigin = new URL(config.frontendUrl).origin;
  if (frontendOrigin !== new URL(config.baseUrl).origin) app.use(corsFor(frontendOrigin));
  const contextFor = (req: express.Request): AccountContext => ({ services, request: new AccountRequest(req) });
  app.use('/trpc', trpcEndpoint(accountRouter, contextFor));
  app.get('/.well-known/jwks.json', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.json(services.tokens.issuer.keys.jwks);
  });
  app.get('/metrics', metricsEndpoint(metrics, config.metricsToken, { more: () => services.localAgentsScrape.text() }));
  mountHealthRoutes(
    app,
    {
      database: () => services.store.db.$queryRaw`SELECT 1`,
      ...(config.redisUrl ? { redis: () => services.rateLimits.ping() } : {}),
    },
    services.shutdown,
  );
  if (config.devOutbox) {
    mountDevOutbox(app, config.outboxDir);
    log.warn(
      { path: '/dev/outbox', host: config.host },
      'DEV_OUTBOX=1: every sign-in mail is listed at /dev/outbox, to callers on this machine only (loopback, no proxy)',
    );
  }
  const api = express.Router();
  mountAccountBridge(api, services, contextFor, config.baseUrl);
  app.use(API_PREFIX, api);
  if (!serveWebClient(app, undefined, config.captcha?.provider)) log.warn('web client not built (npm run build:web): only the APIs are served');
  finishHttpApp(app);
  const server = await listen(app, config.host, config.port);
  log.info({ url: server.url, store: services.store.kind }, 'account service listening');
  return {
    url: server.url,
    services,
    async close() {
      // No new connections; relayed streams end with `reconnect` and requests in flight finish.
      // Local agents stop while the server drains: a reply the stop cuts is kept in their
      // history with the `error` that says so, which a client that follows up finds there.
      services.beginShutdown();
      await Promise.all([server.close(config.agentStopGraceMs + 5_000), services.stopAgents()]);
      await services.close();
      await tracing?.close();
    },
  };
}
