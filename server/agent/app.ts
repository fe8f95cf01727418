/**
 * The agent's HTTP server: tRPC at /trpc, the documented REST paths at the root (rest-bridge/),
 * and the shared express shell. `startAgent` is what main.ts and the tests run.
 */
import { isAgentUpload } from '@contracts/agent/routes.js';
import { isAgentSecret } from './auth.js';
import { mountAgentBridge } from './rest-routes.js';
import { createHttpApp, finishHttpApp, jsonBody, listen, trpcEndpoint } from '../common/http.js';
import { mountHealthRoutes } from '../common/health.js';
import { metricsEndpoint } from '../common/metrics.js';
import { createLogger, type Logger } from '../common/log.js';
import { startTracing } from '../common/tracing.js';
import type { AgentConfig } from './config.js';
import { TELEGRAM_WEBHOOK_PATH, telegramWebhook } from './messenger/webhook.js';
import { agentRouter } from './router.js';
import { createAgentServices, type AgentServices } from './services.js';
import { sweepPartialUploads } from './files/upload.js';
import { startExecRelay } from './net/exec-relay.js';
import { createAgentContext } from './trpc.js';

export interface RunningAgent {
  url: string;
  services: AgentServices;
  close(): Promise<void>;
}

export async function startAgent(config: AgentConfig, log: Logger = createLogger('agent', config.logLevel, config.logPretty)): Promise<RunningAgent> {
  const services = await createAgentServices(config, log);
  const { metrics } = services;
  const tracing = config.otlpEndpoint ? await startTracing(config.otlpEndpoint, 'agent', log) : undefined;
  const app = createHttpApp(log, {
    metrics,
    tracing,
    // The account service's proxy forwards only the documented spellings; the agent serves only them too.
    strictRouting: true,
    bodyTimeouts: {
      deadlineMs: config.requestBodyTimeoutSeconds * 1000,
      uploadIdleMs: config.uploadIdleTimeoutSeconds * 1000,
      isUpload: (req) => isAgentUpload(req.method, req.path),
    },
  });
  app.use(services.requests.middleware);
  app.use(
    '/trpc',
    trpcEndpoint(agentRouter, (req) => createAgentContext(services, req.log, req.headers.authorization, req.headers)),
  );
  // Telegram's webhook calls (webhook mode only): authenticated by their own secret header.
  app.post(TELEGRAM_WEBHOOK_PATH, jsonBody, telegramWebhook(services.messenger));
  // The account service scrapes a local agent over its socket with the agent secret (no loopback there).
  app.get('/metrics', metricsEndpoint(metrics, config.metricsToken, { admits: (req) => isAgentSecret(req.headers.authorization, config.secretSha256) }));
  mountHealthRoutes(app, { database: async () => services.store.sql.prepare('SELECT 1').get() });
  mountAgentBridge(app, (req) => createAgentContext(services, req.log, req.headers.authorization));
  finishHttpApp(app);
  const swept = await sweepPartialUploads(config.workspace);
  if (swept.length) log.warn({ files: swept }, 'removed partial uploads left by a crash');
  const server = await listen(app, config.host, config.port, config.socketPath);
  const { execProxy, execEgressSocket } = config.chat;
  const relay = execProxy && execEgressSocket ? await startExecRelay(execProxy, execEgressSocket) : undefined;
  log.info({ url: server.url, name: config.name, workspace: config.workspace }, 'agent listening');
  return {
    url: server.url,
    services,
    async close() {
      // Runs get the grace period to finish, then what is left is interrupted: each such run
      // ends with an `error` saying so and its stream with `done`, instead of holding the server
      // open. The bot stops after that, so it still delivers those ends; a run it started in
      // the meantime is interrupted by the second close.
      await services.drain(config.stopGraceMs);
      await services.chat.close();
      await services.messenger.stop();
      await services.chat.close();
      await server.close();
      await relay?.close();
      await services.close();
      await tracing?.close();
    },
  };
}
