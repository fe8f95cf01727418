/**
 * A protected MCP server with its own OAuth authorization server, on one loopback port, made of
 * the SDK's server pieces: `mcpAuthRouter` (RFC 8414 metadata, RFC 7591 registration, PKCE
 * authorization and token endpoints, RFC 9728 protected resource metadata) over the SDK's demo
 * provider, which approves every authorization request at once (the user "clicks through") or,
 * with `consent`, first shows a page asking the user to Allow or Deny (what a browser test clicks),
 * and `requireBearerAuth` in front of a streamable-HTTP MCP server with one tool, `whoami`. Every
 * access token it issues is kept in `issued`, so a test can search for them where they must not be,
 * and can be revoked (`revoke`); what each request asked is kept in `methods`.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express } from 'express';
import { DemoInMemoryAuthProvider } from '@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { getOAuthProtectedResourceMetadataUrl, mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface OAuthMcpServer {
  url: string;
  issuer: string;
  /** Access tokens issued so far. */
  issued: string[];
  /** Authorization requests received (their query), in order. */
  authorizations: URLSearchParams[];
  /** The JSON-RPC method of each message posted to the MCP endpoint with a valid token, in order. */
  methods: string[];
  /** Revokes an access token: from now on it gets 401 invalid_token. */
  revoke(token: string): void;
  close(): Promise<void>;
}

/** Authorization requests wait for the user's answer on a page of the provider's own; Deny sends `access_denied` back. */
function askFirst(app: Express, provider: DemoInMemoryAuthProvider): void {
  const approve = provider.authorize.bind(provider);
  const waiting = new Map<string, { client: Parameters<typeof approve>[0]; params: Parameters<typeof approve>[1] }>();
  provider.authorize = async (client, params, res) => {
    const id = randomUUID();
    waiting.set(id, { client, params });
    const who = (client.client_name ?? client.client_id).replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);
    res
      .type('html')
      .send(
        `<!doctype html><html lang="en"><head><title>Sign in · oauth-test</title></head><body><main><h1>Allow access?</h1>` +
          `<p>${who} asks to use your tools on oauth-test.</p><form method="post" action="/consent"><input type="hidden" name="id" value="${id}">` +
          '<button name="answer" value="allow">Allow</button> <button name="answer" value="deny">Deny</button></form></main></body></html>',
      );
  };
  app.post('/consent', express.urlencoded({ extended: false }), async (req, res) => {
    const id = String(req.body?.id ?? '');
    const request = waiting.get(id);
    waiting.delete(id);
    if (!request) return void res.status(400).send('This request is unknown or was answered already.');
    const { client, params } = request;
    if (req.body?.answer === 'allow') return approve(client, params, res);
    const back = new URL(params.redirectUri);
    back.searchParams.set('error', 'access_denied');
    if (params.state !== undefined) back.searchParams.set('state', params.state);
    res.redirect(back.href);
  });
}

export async function startOAuthMcpServer(options: { consent?: boolean } = {}): Promise<OAuthMcpServer> {
  const app = express();
  // Browser tests send X-Forwarded-For to every origin (e2e/support/guest.ts `ownClient`): the SDK's rate limits read it from loopback.
  app.set('trust proxy', 'loopback');
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const mcpUrl = new URL('/mcp', origin);
  const issued: string[] = [];
  const authorizations: URLSearchParams[] = [];
  const methods: string[] = [];
  const revoked = new Set<string>();
  const provider = new DemoInMemoryAuthProvider((resource) => resource?.href === mcpUrl.href);
  const exchange = provider.exchangeAuthorizationCode.bind(provider);
  provider.exchangeAuthorizationCode = async (...args) => {
    const tokens = await exchange(...args);
    issued.push(tokens.access_token);
    return tokens;
  };
  if (options.consent) askFirst(app, provider);
  const verify = provider.verifyAccessToken.bind(provider);
  provider.verifyAccessToken = async (token) => {
    if (revoked.has(token)) throw new InvalidTokenError('The token was revoked');
    return verify(token);
  };
  app.use((req, _res, next) => {
    if (req.path === '/authorize') authorizations.push(new URLSearchParams(req.url.split('?')[1] ?? ''));
    next();
  });
  app.use(mcpAuthRouter({ provider, issuerUrl: new URL(origin), scopesSupported: ['mcp:tools'], resourceServerUrl: mcpUrl }));
  const bearer = requireBearerAuth({ verifier: provider, requiredScopes: [], resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl) });
  app.post('/mcp', express.json(), bearer, async (req, res) => {
    methods.push(String((req.body as { method?: unknown }).method));
    // Stateless: a server and transport per request.
    const mcp = new McpServer({ name: 'oauth-test', version: '1.0.0' });
    mcp.registerTool('whoami', { description: 'Who the bearer token says the caller is' }, async (extra) => ({
      content: [{ type: 'text', text: `signed in as client ${extra.authInfo?.clientId ?? 'nobody'}` }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close());
    await mcp.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  app.all('/mcp', bearer, (_req, res) => void res.status(405).json({ error: 'method not allowed', id: randomUUID() }));
  return {
    url: mcpUrl.href,
    issuer: origin,
    issued,
    authorizations,
    methods,
    revoke: (token) => void revoked.add(token),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
