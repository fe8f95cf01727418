/**
 * The connector client, on `@modelcontextprotocol/sdk`: connects over streamable HTTP and falls
 * back to the older HTTP+SSE transport when the server does not speak it; lists tools; calls one
 * and turns its result into the shape the agent gets (contracts/agent/connectors.ts). Everything
 * it sends goes through the fetch it is given (network.ts: checked addresses) and is authorized
 * by the provider it is given (oauth.ts). scripts/mcp-conformance-client.ts runs it against the
 * official conformance suite.
 */
import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ConnectorCallResult, ConnectorContent } from '@contracts/agent/connectors.js';

export interface McpConnection {
  client: Client;
  /** `streamable-http` or `sse`. */
  transport: 'streamable-http' | 'sse';
  close(): Promise<void>;
  /** The first failure its transport reported, once one did. */
  failure?: Error;
}

export interface ConnectOptions {
  fetch?: typeof fetch;
  authProvider?: OAuthClientProvider;
  /** How long the handshake may take. */
  timeoutMs: number;
  /** A transport failure after connecting (the server went away): the connection is dead. */
  onBroken?: (error: Error) => void;
  /**
   * What to answer a server that asks the user for input (elicitation): `decline` when no person is
   * at hand (a tool call of an agent); `defaults` accepts the form with the defaults it offers.
   */
  elicitation?: 'decline' | 'defaults';
}

/** The statuses an old HTTP+SSE server answers a streamable POST with. */
const NOT_STREAMABLE = new Set([400, 404, 405]);

function newClient(elicitation: ConnectOptions['elicitation'] = 'decline'): Client {
  const client = new Client({ name: 'agent-accounts', version: '1.0.0' }, { capabilities: { elicitation: { form: { applyDefaults: true } } } });
  // Never left waiting: the SDK fills an accepted form's omitted fields with the schema's defaults.
  client.setRequestHandler(ElicitRequestSchema, async () =>
    elicitation === 'defaults' ? { action: 'accept' as const, content: {} } : { action: 'decline' as const },
  );
  return client;
}

/** Connects to an MCP server; an `UnauthorizedError` means the provider holds a URL for the user to sign in at. */
export async function connectMcp(url: URL, options: ConnectOptions): Promise<McpConnection> {
  const common = { fetch: options.fetch, authProvider: options.authProvider };
  const streamable = new StreamableHTTPClientTransport(url, {
    ...common,
    // A dropped stream is retried briefly; then the call fails instead of hanging (the server is gone).
    reconnectionOptions: { initialReconnectionDelay: 250, maxReconnectionDelay: 1_000, reconnectionDelayGrowFactor: 2, maxRetries: 2 },
  });
  const client = newClient(options.elicitation);
  try {
    await client.connect(streamable, { timeout: options.timeoutMs });
    return watched(client, 'streamable-http', streamable, options.onBroken);
  } catch (error) {
    await client.close().catch(() => undefined);
    if (!(error instanceof StreamableHTTPError && error.code !== undefined && NOT_STREAMABLE.has(error.code))) throw error;
  }
  const sse = new SSEClientTransport(url, common);
  const legacy = newClient(options.elicitation);
  try {
    await legacy.connect(sse, { timeout: options.timeoutMs });
  } catch (error) {
    await legacy.close().catch(() => undefined);
    throw error;
  }
  return watched(legacy, 'sse', sse, options.onBroken);
}

function watched(
  client: Client,
  kind: McpConnection['transport'],
  transport: { onerror?: (error: Error) => void },
  onBroken?: (error: Error) => void,
): McpConnection {
  const connection: McpConnection = { client, transport: kind, close: () => client.close() };
  const sdkHandler = transport.onerror;
  transport.onerror = (error) => {
    sdkHandler?.(error);
    connection.failure ??= error;
    onBroken?.(error);
  };
  return connection;
}

export interface ListedTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

export interface ToolListing {
  tools: ListedTool[];
  /** Why the listing stopped before the server's last page, in the user's words; unset when it is whole. */
  cut?: string;
}

export interface ListingBounds {
  maxTools: number;
  maxPages: number;
  /** For the whole listing, every page together. */
  timeoutMs: number;
}

/**
 * The server's tools, page by page, within bounds a hostile server cannot stretch (docs/connectors.md,
 * Bounds): past `maxTools`, `maxPages` or a cursor it sent before, what was listed is kept and `cut`
 * says why. A first page that does not come within the time fails the listing; a later one ends it.
 */
export async function listMcpTools(client: Client, bounds: ListingBounds): Promise<ToolListing> {
  const tools: ListedTool[] = [];
  // Digests: a cursor is the server's to size, and is echoed back page after page.
  const cursors = new Set<string>();
  const deadline = Date.now() + bounds.timeoutMs;
  let cursor: string | undefined;
  for (let pages = 1; ; pages++) {
    let page: Awaited<ReturnType<Client['listTools']>>;
    try {
      page = await client.listTools(cursor ? { cursor } : {}, { timeout: Math.max(1, deadline - Date.now()) });
    } catch (error) {
      if (pages === 1 || !(error instanceof McpError && error.code === ErrorCode.RequestTimeout)) throw error;
      return { tools, cut: `The server took more than ${bounds.timeoutMs / 1000} s to list its tools; the ${tools.length} listed by then are kept` };
    }
    for (const tool of page.tools) {
      if (tools.length >= bounds.maxTools) return { tools, cut: `The server offers more than ${bounds.maxTools} tools; the first ${bounds.maxTools} are kept` };
      tools.push({ name: tool.name, description: tool.description ?? tool.title ?? '', input_schema: tool.inputSchema as Record<string, unknown> });
    }
    cursor = page.nextCursor;
    if (!cursor) return { tools };
    if (pages >= bounds.maxPages)
      return { tools, cut: `The server's tool list goes on past ${bounds.maxPages} pages; the ${tools.length} tools of those are kept` };
    const digest = createHash('sha256').update(cursor).digest('base64');
    if (cursors.has(digest)) return { tools, cut: `The server's tool list came back to a page it had sent; the ${tools.length} tools before are kept` };
    cursors.add(digest);
  }
}

/** An MCP tool result as the agent gets it; unknown content kinds become a note. */
export function toConnectorResult(result: CallToolResult): ConnectorCallResult {
  const content: ConnectorContent[] = (result.content ?? []).map((item): ConnectorContent => {
    switch (item.type) {
      case 'text':
        return { type: 'text', text: item.text };
      case 'image':
        return { type: 'image', data: item.data, mime_type: item.mimeType };
      case 'audio':
        return { type: 'audio', data: item.data, mime_type: item.mimeType };
      case 'resource': {
        const resource = item.resource as { uri: string; mimeType?: string; text?: string; blob?: string };
        return { type: 'resource', uri: resource.uri, mime_type: resource.mimeType, text: resource.text, blob: resource.blob };
      }
      case 'resource_link':
        return { type: 'resource_link', uri: item.uri, name: item.name, description: item.description };
      default:
        return { type: 'text', text: `[content of type ${(item as { type: string }).type} left out]` };
    }
  });
  const structured = result.structuredContent as Record<string, unknown> | undefined;
  return { content, ...(structured ? { structured } : {}), is_error: result.isError === true };
}
