/**
 * A protected MCP server with its own OAuth authorization server, on one loopback port, made of
 * the SDK's server pieces: `mcpAuthRouter` (RFC 8414 metadata, RFC 7591 registration, PKCE
 * authorization and token endpoints, RFC 9728 protected resource metadata) over the SDK's demo
 * provider, which approves every authorization request at once (the user "clicks through"), and
 * `requireBearerAuth` in front of a streamable-HTTP MCP server with one tool, `whoami`. Every
 * access token it issues is kept in `issued`, so a test can search for them where they must not be,
 * and can be revoked (`revoke`); what each request asked is kept in `methods`.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
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

export async function startOAuthMcpServer(): Promise<OAuthMcpServer> {
  const app = express();
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
