/**
 * The account API's documented REST paths (spec: "Account API"), mounted under /api/v1: this
 * service's route table, made of the generic machinery of rest-bridge/.
 * Routes only: every handler calls an account procedure, except `/agent/*`, which hands the
 * request to the agent proxy (server/account/agents/proxy/http-proxy.ts), and the API reference
 * (`/docs`, rest-bridge/api-docs.ts).
 */
import type { IRouter, Request } from 'express';
import { accountRouter } from './router.js';
import type { AccountContext } from './trpc.js';
import { proxyToOwnAgent, type ProxyServices } from './agents/proxy/http-proxy.js';
import { parseCookies } from './auth/oauth/cookies.js';
import { AccountRequest } from './request.js';
import { SIGN_IN_COOKIE } from './connectors/sign-in-cookie.js';
import type { AccountServices } from './services.js';
import { AppError, notFound } from '../common/errors.js';
import { jsonBody } from '../common/http.js';
import { mountJsonProcedures } from '../../rest-bridge/json.js';
import { mountApiDocs } from '../../rest-bridge/api-docs.js';
import { openApiDocument } from '../../rest-bridge/openapi.js';
import { RouteTable, type ServiceErrorCodes } from '../../rest-bridge/routes.js';

/** The agent path and query as sent (`/chat/c1/stream?x`), and the path alone, which agents/proxy/agent-routes.ts matches. */
function agentTarget(rest: string): { path: string; pathname: string } {
  const query = rest.indexOf('?');
  return { path: rest, pathname: query < 0 ? rest : rest.slice(0, query) };
}

/** What any account route can answer, and what a signed-in one adds (tokens/service.ts `authenticate`). */
const ACCOUNT_ERRORS: ServiceErrorCodes = {
  everyRoute: ['INTERNAL', 'METHOD_NOT_ALLOWED', 'STORE_UNAVAILABLE'],
  authenticated: ['MISSING_TOKEN', 'INVALID_TOKEN', 'TOKEN_EXPIRED', 'SESSION_REVOKED', 'MFA_REQUIRED'],
};

export function mountAccountBridge(
  api: IRouter,
  services: ProxyServices & Pick<AccountServices, 'bots' | 'connectors' | 'config' | 'rateLimits'>,
  contextFor: (req: Request) => AccountContext,
  baseUrl: string,
): void {
  const table = new RouteTable(api, ACCOUNT_ERRORS);
  mountJsonProcedures(table, accountRouter, contextFor);

  // The signed-in user's own agent, at its documented REST paths under /api/v1/agent/.
  api.all('/agent/*path', (req, res) => {
    res.locals.route = '/agent/*';
    // The account's own routing tolerates other spellings of `/agent`; the proxy does not (agents/proxy/agent-routes.ts).
    const prefix = `${req.baseUrl}/agent`;
    if (!req.originalUrl.startsWith(prefix)) throw notFound('No such agent path', 'ROUTE_NOT_FOUND');
    return proxyToOwnAgent(services, req, res, agentTarget(req.originalUrl.slice(prefix.length)));
  });

  // Telegram's pushes for a user's bot (webhook mode, messenger/bots.ts): authenticated by the
  // secret_token header, answered once the agent accepted the update.
  table.add(
    'post',
    '/telegram/{webhook_id}/webhook',
    [
      jsonBody,
      async (req, res) => {
        if (!services.bots) throw notFound('No such webhook', 'WEBHOOK_NOT_FOUND');
        await services.bots.relay(String(req.params.webhook_id), req.get('x-telegram-bot-api-secret-token'), req.body);
        res.json({ ok: true });
      },
    ],
    undefined,
    { errors: ['WEBHOOK_NOT_FOUND', 'INVALID_WEBHOOK_SECRET', 'BAD_REQUEST', 'AGENT_UNAVAILABLE'] },
  );

  mountConnectorSignIn(table, services);

  let document: Promise<unknown> | undefined;
  table.add('get', '/openapi.json', [
    async (_req, res) => {
      document ??= openApiDocument(accountRouter, table, { title: 'Account API', version: '1', baseUrl: `${baseUrl}/api/v1` });
      res.json(await document);
    },
  ]);
  mountApiDocs(table, 'Account API');
  table.finish();
}

/**
 * The browser's part of a connector's sign-in: the one-time link sends it to the provider, the
 * provider sends it back to the callback, which stores the tokens and sends it to the Connectors
 * page. Both steps need the browser's sign-in cookie (connectors/sign-in-cookie.ts). Failures
 * land on that page too, with the reason.
 */
function mountConnectorSignIn(table: RouteTable, services: Pick<AccountServices, 'connectors' | 'config' | 'rateLimits'>): void {
  const { connectors, config, rateLimits } = services;
  const page = (params: Record<string, string>) => `${config.frontendUrl}/connectors?${new URLSearchParams(params)}`;
  const browserOf = (req: Request) => parseCookies(req.get('cookie'))[SIGN_IN_COOKIE];
  // Counted before the look-up, like every sign-in step (trpc.ts, rateLimited: the same client
  // address and RateLimit-* headers); a refusal lands on the page like any other failure.
  const admit = (req: Request) => {
    const request = new AccountRequest(req);
    return rateLimits.consume('connectors.browser', rateLimits.clientKey(request.ip), request.setHeader);
  };
  table.add(
    'get',
    '/connectors/{id}/authorize',
    [
      async (req, res) => {
        try {
          await admit(req);
          const { location } = await connectors.openTicket(String(req.params.id), String(req.query.ticket ?? ''), browserOf(req));
          res.redirect(302, location);
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          res.redirect(302, page({ error: error.message }));
        }
      },
    ],
    undefined,
    { errors: ['CONNECTOR_SIGN_IN_FAILED'] },
  );
  table.add('get', '/connectors/callback', [
    async (req, res) => {
      const query = Object.fromEntries(
        ['state', 'code', 'error', 'error_description'].flatMap((name) => (typeof req.query[name] === 'string' ? [[name, req.query[name] as string]] : [])),
      );
      // The cookie stays until it expires: another sign-in of this browser may still be under way.
      try {
        await admit(req);
        res.redirect(302, (await connectors.finishSignIn(query, browserOf(req))).location);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        res.redirect(302, page({ error: error.message }));
      }
    },
  ]);
  // The client ID metadata document authorization servers may fetch instead of registering us (https services only).
  table.add('get', '/connectors/client-metadata.json', [
    (_req, res) => {
      if (!connectors.clientMetadataUrl) throw notFound('This service is not on https: it registers with each server instead', 'ROUTE_NOT_FOUND');
      res.json(connectors.clientMetadataDocument());
    },
  ]);
}
