/**
 * The project's connector client (server/account/connectors/: the SDK transport with its SSE
 * fallback, the OAuth provider, the checked fetch) as a command for the official MCP conformance
 * suite, `@modelcontextprotocol/conformance` (test/connectors/conformance.test.ts runs every client
 * scenario):
 *
 *   npx @modelcontextprotocol/conformance@0.1.13 client --command "npx tsx scripts/mcp-conformance-client.ts" --scenario <name>
 *
 * The suite passes the server URL as the last argument, the scenario in MCP_CONFORMANCE_SCENARIO
 * and, for scenarios with pre-issued credentials, MCP_CONFORMANCE_CONTEXT. The client behaves the
 * same in every scenario, as a connector does: connect, sign in when the server asks (here
 * headless: the suite's authorization server answers the authorization request with a redirect
 * carrying the code, where a user's browser would go in the product), list the tools and call each
 * with arguments made from its schema, signing in again when a call asks for more scope. Exits
 * non-zero on failure.
 */
import { auth, UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { ClientCredentialsProvider, PrivateKeyJwtProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { connectMcp, listMcpTools, type ListedTool, type McpConnection } from '../server/account/connectors/mcp.js';
import { connectorFetch } from '../server/account/connectors/network.js';
import { ConnectorOAuth, type StoredAuth } from '../server/account/connectors/oauth.js';

const REDIRECT_URL = 'http://localhost:3000/callback';
/** Offered to servers that take client ID metadata documents (the suite's does not fetch it). */
const CLIENT_METADATA_URL = 'https://conformance-test.local/client-metadata.json';
/** Sign-ins one run may make: a server that keeps asking for more is given up on. */
const MAX_SIGN_INS = 3;
const TIMEOUT_MS = 10_000;

interface Context {
  name?: string;
  client_id?: string;
  client_secret?: string;
  private_key_pem?: string;
  signing_algorithm?: string;
}

const serverUrl = new URL(process.argv.at(-1) ?? '');
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as Context;
// The suite's servers are on loopback (cloud metadata stays refused); answers bounded as the
// service's with CONNECTOR_RESULT_MAX_BYTES at its default.
const fetchFn = connectorFetch(true, 4 * 2 ** 20);

const stored: StoredAuth = {};
let user: ConnectorOAuth | undefined;

/** The provider the scenario's credentials call for: a machine client's, or a user's (the product's). */
function provider(): OAuthClientProvider {
  if (context.private_key_pem && context.client_id)
    return new PrivateKeyJwtProvider({ clientId: context.client_id, privateKey: context.private_key_pem, algorithm: context.signing_algorithm ?? 'ES256' });
  if (context.client_secret && context.client_id && context.name?.startsWith('auth/client-credentials'))
    return new ClientCredentialsProvider({ clientId: context.client_id, clientSecret: context.client_secret });
  if (context.client_id && !stored.client)
    stored.client = { client_id: context.client_id, client_secret: context.client_secret, redirect_uris: [REDIRECT_URL] };
  user = new ConnectorOAuth(stored, { redirectUrl: REDIRECT_URL, clientName: 'agent-accounts conformance', clientMetadataUrl: CLIENT_METADATA_URL });
  return user;
}

/** What the user's browser would do: open the authorization URL, come back to the callback with the code. */
async function signIn(): Promise<void> {
  const url = user?.authorizationUrl;
  if (!user || !url) throw new Error('the server asked for a sign-in this client cannot make');
  const answer = await fetchFn(url, { redirect: 'manual' });
  const back = URL.parse(answer.headers.get('location') ?? '', url);
  const code = back?.searchParams.get('code');
  if (!code) throw new Error(`the authorization server answered ${answer.status} without a code`);
  if (back?.searchParams.get('state') !== user.currentState) throw new Error('the authorization server sent back another state');
  const result = await auth(user, { serverUrl, authorizationCode: code, fetchFn });
  if (result !== 'AUTHORIZED') throw new Error(`the code exchange answered ${result}`);
}

/** Arguments a schema accepts, made from its required properties' types. */
function argumentsFor(tool: ListedTool): Record<string, unknown> {
  const properties = (tool.input_schema.properties ?? {}) as Record<string, { type?: string; default?: unknown }>;
  const required = new Set((tool.input_schema.required ?? []) as string[]);
  const sample: Record<string, unknown> = { number: 1, integer: 1, string: 'conformance', boolean: true, array: [], object: {} };
  return Object.fromEntries(
    Object.entries(properties)
      .filter(([name]) => required.has(name))
      .map(([name, schema]) => [name, schema.default ?? sample[schema.type ?? 'string'] ?? null]),
  );
}

/** Runs `work` on a connection, signing in and starting over when the server asks (at most MAX_SIGN_INS times). */
async function withSignIn<T>(work: (connection: McpConnection) => Promise<T>): Promise<T> {
  const authProvider = provider();
  for (let signIns = 0; ; signIns++) {
    let connection: McpConnection | undefined;
    try {
      connection = await connectMcp(serverUrl, { fetch: fetchFn, authProvider, timeoutMs: TIMEOUT_MS, elicitation: 'defaults' });
      return await work(connection);
    } catch (error) {
      if (!(error instanceof UnauthorizedError) || signIns >= MAX_SIGN_INS) throw error;
      await signIn();
    } finally {
      await connection?.close().catch(() => undefined);
    }
  }
}

const called = new Set<string>();
try {
  await withSignIn(async ({ client }) => {
    for (const tool of (await listMcpTools(client, { maxTools: 50, maxPages: 10, timeoutMs: TIMEOUT_MS })).tools) {
      if (called.has(tool.name)) continue;
      await client.callTool({ name: tool.name, arguments: argumentsFor(tool) }, undefined, { timeout: TIMEOUT_MS });
      called.add(tool.name);
    }
  });
  process.stdout.write(`called ${[...called].join(', ') || 'no tools'}\n`);
  // Kept-alive connections would hold the process open past the suite's patience.
  process.exit(0);
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
