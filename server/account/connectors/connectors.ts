/**
 * Each full account's own remote MCP servers (docs/connectors.md): adding one by URL, its browser
 * sign-in, its tools and their switches, and the calls its owner's agent makes through the egress
 * gateway (agents/egress/connectors.ts). Tokens and client registrations are sealed at rest
 * (agents/secrets.ts) and leave this service only in the `Authorization` header of a request to
 * the connector itself: the agent gets tool lists and results, never a credential.
 *
 * One live MCP connection per connector is kept while it is used (`pool`), so a tool call costs
 * one request to the server; a connection whose transport failed is dropped and made again on the
 * next call, and one unused for CONNECTOR_IDLE_TIMEOUT is closed (a connector removed on another
 * instance, or of a deleted account, holds no socket and no token in memory here for long). Every call is bounded (CONNECTOR_CALL_TIMEOUT, CONNECTOR_RESULT_MAX_BYTES): a server
 * that is down or slow gives the model an error, never a hung run.
 */
import { createHash, randomBytes } from 'node:crypto';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { ErrorCode as McpErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { connectorToolName, type ConnectorCallResult, type ConnectorTool } from '@contracts/agent/connectors.js';
import { AppError, notFound } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import type { SecretBox } from '../agents/secrets.js';
import type { AccountDb } from '../store.js';
import type { ConnectorsConfig } from './config.js';
import { connectMcp, listMcpTools, toConnectorResult, type ListedTool, type McpConnection } from './mcp.js';
import { checkConnectorUrl, connectorFetch, describeFetchError, type AddressRules } from './network.js';
import { ConnectorOAuth, type StoredAuth } from './oauth.js';
import type { ConnectorStatus, ConnectorUpdate, ConnectorView, CreatedConnector } from './schemas.js';
import { SIGN_IN_TTL_MS } from './sign-in-cookie.js';

/**
 * The most tools one connector offers, and the most pages of its list read for them (a server
 * answering page after page with no end would hold the request that adds it for ever); a schema
 * larger than this many bytes is left out.
 */
const MAX_TOOLS = 128;
const MAX_TOOL_PAGES = 10;
const MAX_SCHEMA_BYTES = 32 * 1024;
/** What one user's agent is offered of all their connectors' tools (`agentTools`). */
const MAX_AGENT_TOOLS = 96;
const MAX_AGENT_TOOL_BYTES = 256 * 1024;
const MAX_DESCRIPTION = 2_000;
const HANDSHAKE_MS = 15_000;
/** What a model provider accepts as a tool name (OpenAI and Anthropic alike). */
const MODEL_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * How long a user's connector rows are reused for their agent's calls and tool lists: a call then
 * costs no store query (bench/connectors.ts). Changes made on this instance drop them at once; on
 * another instance of the service they are seen within this time.
 */
const ROWS_TTL_MS = 2_000;

const digest = (value: string) => createHash('sha256').update(value).digest('base64url');

export interface ConnectorsOptions extends ConnectorsConfig {
  /** BASE_URL: the callback and the sign-in links are under it. */
  baseUrl: string;
  /** FRONTEND_URL: where the browser lands after signing in. */
  frontendUrl: string;
}

type Row = NonNullable<Awaited<ReturnType<AccountDb['connector']['findFirst']>>>;

/** A sign-in the browser finished: where to send it next. */
export interface SignInOutcome {
  location: string;
}

export class Connectors {
  private readonly pool = new Map<string, Promise<McpConnection>>();
  /** When each pooled connection was last handed to a call. */
  private readonly lastUsed = new Map<string, number>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly fetch: typeof fetch;
  private readonly rules: AddressRules;
  /** Writes of one connector's sealed auth, in order. */
  private readonly writes = new Map<string, Promise<unknown>>();
  /** Each user's connector rows as their agent last read them (`ROWS_TTL_MS`). */
  private readonly rows = new Map<string, { at: number; rows: Promise<Row[]> }>();

  constructor(
    private readonly db: AccountDb,
    private readonly box: SecretBox,
    private readonly log: Logger,
    private readonly options: ConnectorsOptions,
  ) {
    this.fetch = connectorFetch(options.allowPrivate, options.resultMaxBytes);
    this.rules = { allowPrivate: options.allowPrivate, allowOrigins: options.allowOrigins, selfOrigin: new URL(options.baseUrl).origin };
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, options.idleMs / 2));
    this.sweeper.unref();
  }

  /** Closes connections unused for `idleMs` and forgets row reads past their reuse. */
  private sweep(now = Date.now()): void {
    for (const [connectorId, at] of this.lastUsed) if (now - at > this.options.idleMs) this.drop(connectorId);
    for (const [userId, entry] of this.rows) if (now - entry.at > ROWS_TTL_MS) this.rows.delete(userId);
  }

  get redirectUrl(): string {
    return `${this.options.baseUrl}/api/v1/connectors/callback`;
  }

  /** Offered to servers that take client ID metadata documents: only an https service can serve one. */
  get clientMetadataUrl(): string | undefined {
    return this.options.baseUrl.startsWith('https://') ? `${this.options.baseUrl}/api/v1/connectors/client-metadata.json` : undefined;
  }

  /** The document at `clientMetadataUrl` (its client_id is its own URL). */
  clientMetadataDocument(): Record<string, unknown> {
    return { client_id: this.clientMetadataUrl, ...this.oauth({}).clientMetadata, token_endpoint_auth_method: 'none' };
  }

  async list(userId: string): Promise<ConnectorView[]> {
    const rows = await this.db.connector.findMany({ where: { userId }, orderBy: { createdAt: 'asc' } });
    return rows.map(view);
  }

  /** `browser`: the sign-in cookie's value (sign-in-cookie.ts) the link, if one is needed, will work with. */
  async create(userId: string, input: { name: string; url: string }, browser: string): Promise<CreatedConnector> {
    const url = await checkConnectorUrl(input.url, this.rules);
    if ((await this.db.connector.count({ where: { userId } })) >= this.options.maxPerUser)
      throw new AppError(409, 'CONNECTORS_LIMIT', `An account may have ${this.options.maxPerUser} connectors`);
    let row: Row;
    try {
      row = await this.db.connector.create({ data: { userId, name: input.name, url: url.href, status: 'needs_auth' } });
    } catch (error) {
      if ((error as { code?: string }).code === 'P2002') throw new AppError(409, 'CONNECTOR_NAME_TAKEN', `You already have a connector named ${input.name}`);
      throw error;
    }
    const outcome = await this.attempt(row, browser);
    if (outcome.status === 'error') {
      await this.db.connector.delete({ where: { id: row.id } }).catch(() => undefined);
      throw new AppError(502, 'CONNECTOR_UNREACHABLE', `${url.origin} did not answer as an MCP server: ${outcome.error}`);
    }
    return {
      id: row.id,
      name: row.name,
      url: row.url,
      status: outcome.status,
      ...(outcome.ticket ? { authorize_url: this.authorizeUrl(row.id, outcome.ticket) } : {}),
    };
  }

  async update(userId: string, input: ConnectorUpdate): Promise<ConnectorView> {
    const row = await this.own(userId, input.id);
    const disabled = new Set(row.disabledTools);
    for (const [tool, enabled] of Object.entries(input.tools ?? {})) {
      if (enabled) disabled.delete(tool);
      else disabled.add(tool);
    }
    try {
      const updated = await this.db.connector.update({
        where: { id: row.id },
        data: { ...(input.name ? { name: input.name } : {}), disabledTools: [...disabled].slice(0, 1000) },
      });
      this.rows.delete(userId);
      return view(updated);
    } catch (error) {
      if ((error as { code?: string }).code === 'P2002') throw new AppError(409, 'CONNECTOR_NAME_TAKEN', `You already have a connector named ${input.name}`);
      throw error;
    }
  }

  /** Forgets the connector, closing its connection and revoking its tokens where the server allows. */
  async remove(userId: string, id: string): Promise<void> {
    const row = await this.own(userId, id);
    await this.db.connector.delete({ where: { id: row.id } });
    this.rows.delete(userId);
    this.drop(row.id);
    const stored = this.stored(row);
    await this.revoke(stored).catch((error: unknown) => this.log.info({ connectorId: row.id, reason: describeFetchError(error) }, 'token revocation failed'));
  }

  /** A fresh sign-in link for a connector that needs one (or to sign in again). */
  async authorizeLink(userId: string, id: string, browser: string): Promise<{ authorize_url: string }> {
    const row = await this.own(userId, id);
    this.drop(row.id);
    // Signing in again starts from no token: the server's challenge then says what it wants.
    const stored = this.stored(row);
    delete stored.tokens;
    await this.persist(row.id, stored);
    const outcome = await this.attempt({ ...row, authEncrypted: this.box.seal(JSON.stringify(stored)) }, browser);
    if (outcome.status === 'error') throw new AppError(502, 'CONNECTOR_UNREACHABLE', `${new URL(row.url).origin} did not answer: ${outcome.error}`);
    if (!outcome.ticket) throw new AppError(409, 'CONFLICT', 'This connector needs no sign-in');
    return { authorize_url: this.authorizeUrl(row.id, outcome.ticket) };
  }

  /**
   * `GET /connectors/{id}/authorize?ticket=…`: only in the browser the link was made for (its
   * sign-in cookie, `browser`), once; sends it on to the provider. Anyone else who opened a link
   * someone sent them would grant their own account at the provider to the sender's connector.
   */
  async openTicket(connectorId: string, ticket: string, browser: string | undefined): Promise<{ location: string }> {
    const flow = await this.db.connectorFlow.findUnique({ where: { ticketHash: digest(ticket) } });
    if (!flow || flow.connectorId !== connectorId || flow.expiresAt < new Date()) throw signInFailed('This sign-in link is unknown, used or expired');
    if (!browser || !flow.browserHash || digest(browser) !== flow.browserHash)
      throw signInFailed('This sign-in link works only in the browser of the account that added the connector: sign in from its Connectors page');
    // Used up: its hash gives way to one nobody holds.
    const { count } = await this.db.connectorFlow.updateMany({
      where: { id: flow.id, ticketHash: flow.ticketHash },
      data: { ticketHash: digest(randomBytes(32).toString('base64url')) },
    });
    if (count !== 1) throw signInFailed('This sign-in link was used already');
    const request = JSON.parse(this.box.open(flow.requestEncrypted)) as { url: string };
    return { location: request.url };
  }

  /** `GET /connectors/callback`: the provider sent the browser back; the code becomes tokens. */
  async finishSignIn(
    query: { state?: string; code?: string; error?: string; error_description?: string },
    browser: string | undefined,
  ): Promise<SignInOutcome> {
    const flow = query.state ? await this.db.connectorFlow.findUnique({ where: { stateHash: digest(query.state) } }) : null;
    if (!flow?.browserHash || !browser || digest(browser) !== flow.browserHash || flow.expiresAt < new Date())
      throw signInFailed('This sign-in is unknown, expired, or was started in another browser');
    // Single use: whoever deletes it finishes it.
    const { count } = await this.db.connectorFlow.deleteMany({ where: { id: flow.id } });
    if (count !== 1) throw signInFailed('This sign-in was finished already');
    const row = await this.db.connector.findFirst({ where: { id: flow.connectorId, userId: flow.userId } });
    if (!row) throw signInFailed('The connector was removed');
    const back = (params: Record<string, string>) => ({
      location: `${this.options.frontendUrl}/connectors?${new URLSearchParams({ connector: row.id, ...params })}`,
    });
    if (query.error || !query.code) {
      const reason = `${query.error ?? 'no code'}${query.error_description ? `: ${query.error_description.slice(0, 200)}` : ''}`;
      await this.db.connector.update({ where: { id: row.id }, data: { lastError: `Sign-in refused (${reason})` } });
      return back({ error: reason });
    }
    const { verifier } = JSON.parse(this.box.open(flow.requestEncrypted)) as { verifier: string };
    const provider = this.oauth(this.stored(row), row.id, verifier);
    try {
      const result = await auth(provider, { serverUrl: row.url, authorizationCode: query.code, fetchFn: this.fetch });
      if (result !== 'AUTHORIZED') throw new Error(`the authorization server answered ${result}`);
    } catch (error) {
      const reason = describeFetchError(error);
      await this.db.connector.update({ where: { id: row.id }, data: { lastError: `Sign-in failed: ${reason}` } });
      return back({ error: reason });
    }
    await this.settled(row.id);
    const fresh = await this.db.connector.findUniqueOrThrow({ where: { id: row.id } });
    const outcome = await this.attempt(fresh);
    return back(outcome.status === 'connected' ? { status: 'connected' } : { error: outcome.error ?? 'The server still asks for a sign-in' });
  }

  /**
   * The user's enabled tools of their connected connectors, named for the model, oldest connector
   * first, at most MAX_AGENT_TOOLS and MAX_AGENT_TOOL_BYTES of them: every run sends them all to
   * the model (20 connectors of 128 tools with 32 KB schemas would be 80 MB a run, and model APIs
   * take 128 tools at most).
   */
  async agentTools(userId: string): Promise<ConnectorTool[]> {
    if (!this.options.enabled) return [];
    const rows = (await this.rowsOf(userId)).filter((row) => row.status === 'connected');
    const offered: ConnectorTool[] = [];
    let bytes = 0;
    for (const row of rows) {
      const disabled = new Set(row.disabledTools);
      for (const tool of listed(row)) {
        const name = connectorToolName(row.name, tool.name);
        if (disabled.has(tool.name) || !MODEL_TOOL_NAME.test(name)) continue;
        const entry = { name, connector: row.name, tool: tool.name, description: tool.description, input_schema: tool.input_schema };
        bytes += Buffer.byteLength(JSON.stringify(entry));
        if (offered.length === MAX_AGENT_TOOLS || bytes > MAX_AGENT_TOOL_BYTES) return offered;
        offered.push(entry);
      }
    }
    return offered;
  }

  /** One tool call of the user's agent. Failures are results the model reads, not throws. */
  async call(userId: string, name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ConnectorCallResult> {
    const failed = (text: string): ConnectorCallResult => ({ content: [{ type: 'text', text }], is_error: true });
    if (!this.options.enabled) return failed('Connectors are turned off on this service');
    const split = name.indexOf('__');
    const connectorName = split > 0 ? name.slice(0, split) : '';
    const toolName = split > 0 ? name.slice(split + 2) : '';
    const row = connectorName ? (await this.rowsOf(userId)).find((candidate) => candidate.name === connectorName) : undefined;
    if (!row) return failed(`No connector named ${connectorName || name}`);
    if (row.status !== 'connected') return failed(`The connector ${row.name} needs its user to sign in again (the Connectors page)`);
    if (!listed(row).some((tool) => tool.name === toolName) || row.disabledTools.includes(toolName))
      return failed(`The connector ${row.name} offers no enabled tool ${toolName}`);
    const timeout = this.options.callTimeoutMs;
    // The SDK keeps its abort listener on the signal after the answer: an abort that came later (the
    // gateway's, when the agent's request closes) would send the server a cancellation of a finished
    // call, a second request per call. So only an abort while the call runs is passed on.
    const running = new AbortController();
    const stop = () => running.abort(signal.reason);
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
    let connection: McpConnection | undefined;
    try {
      connection = await this.connection(row);
      const result = await connection.client.callTool({ name: toolName, arguments: args }, undefined, {
        signal: running.signal,
        timeout,
        maxTotalTimeout: timeout,
      });
      const answer = toConnectorResult(result as Parameters<typeof toConnectorResult>[0]);
      const size = Buffer.byteLength(JSON.stringify(answer));
      if (size > this.options.resultMaxBytes)
        return failed(`The result of ${name} was ${size} bytes, more than the ${this.options.resultMaxBytes} this service passes on`);
      return answer;
    } catch (error) {
      this.drop(row.id);
      if (error instanceof UnauthorizedError) {
        this.rows.delete(userId);
        await this.db.connector.update({ where: { id: row.id }, data: { status: 'needs_auth', lastError: 'The server asked for a new sign-in' } });
        return failed(`The connector ${row.name} needs its user to sign in again (the Connectors page)`);
      }
      if (error instanceof McpError && error.code === McpErrorCode.RequestTimeout)
        return failed(`${name} did not answer within ${timeout / 1000} s (CONNECTOR_CALL_TIMEOUT)`);
      if (signal.aborted) return failed(`${name} was stopped`);
      // A connection closed by its transport failing: that failure is the reason (an answer past its limit, say).
      const cause = error instanceof McpError && error.code === McpErrorCode.ConnectionClosed ? (connection?.failure ?? error) : error;
      return failed(`${name} failed: ${describeFetchError(cause)}`);
    } finally {
      signal.removeEventListener('abort', stop);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const open = [...this.pool.values()];
    this.pool.clear();
    this.lastUsed.clear();
    await Promise.all(open.map((connection) => connection.then((c) => c.close()).catch(() => undefined)));
  }

  /** The user's connectors, from the store at most every ROWS_TTL_MS. */
  private rowsOf(userId: string): Promise<Row[]> {
    const cached = this.rows.get(userId);
    if (cached && Date.now() - cached.at < ROWS_TTL_MS) return cached.rows;
    const rows = this.db.connector.findMany({ where: { userId }, orderBy: { createdAt: 'asc' } });
    this.rows.set(userId, { at: Date.now(), rows });
    rows.catch(() => this.rows.delete(userId));
    if (this.rows.size > 10_000) this.rows.delete(this.rows.keys().next().value as string);
    return rows;
  }

  private async own(userId: string, id: string): Promise<Row> {
    // Whatever the caller does next changes the row: their agent reads it afresh.
    this.rows.delete(userId);
    const row = await this.db.connector.findFirst({ where: { id, userId } });
    if (!row) throw notFound('No such connector on this account', 'CONNECTOR_NOT_FOUND');
    return row;
  }

  private authorizeUrl(id: string, ticket: string): string {
    return `${this.options.baseUrl}/api/v1/connectors/${id}/authorize?ticket=${ticket}`;
  }

  private stored(row: Row): StoredAuth {
    return row.authEncrypted ? (JSON.parse(this.box.open(row.authEncrypted)) as StoredAuth) : {};
  }

  private oauth(stored: StoredAuth, connectorId?: string, verifier?: string): ConnectorOAuth {
    return new ConnectorOAuth(
      stored,
      {
        redirectUrl: this.redirectUrl,
        clientName: 'Agent connectors',
        clientMetadataUrl: this.clientMetadataUrl,
        onChange: connectorId ? (changed) => this.persist(connectorId, changed) : undefined,
      },
      verifier,
    );
  }

  /** Seals and stores what the OAuth provider learnt, in the order it learnt it. */
  private persist(connectorId: string, stored: StoredAuth): Promise<void> {
    const sealed = this.box.seal(JSON.stringify(stored));
    const previous = this.writes.get(connectorId) ?? Promise.resolve();
    const next = previous.then(() => this.db.connector.updateMany({ where: { id: connectorId }, data: { authEncrypted: sealed } }));
    const settled = next.then(
      () => undefined,
      (error: unknown) => this.log.error({ err: error, connectorId }, 'storing connector credentials failed'),
    );
    this.writes.set(connectorId, settled);
    void settled.then(() => {
      if (this.writes.get(connectorId) === settled) this.writes.delete(connectorId);
    });
    return settled;
  }

  private settled(connectorId: string): Promise<unknown> {
    return this.writes.get(connectorId) ?? Promise.resolve();
  }

  /**
   * Connects (and lists the tools) or finds out what stops it: a sign-in (a ticket for the
   * browser, the flow stored; `browser`, the sign-in cookie's value the ticket will work with:
   * none, no browser's) or an error. The status is stored either way.
   */
  private async attempt(row: Row, browser?: string): Promise<{ status: ConnectorStatus; ticket?: string; error?: string }> {
    this.rows.delete(row.userId);
    const provider = this.oauth(this.stored(row), row.id);
    let connection: McpConnection | undefined;
    try {
      connection = await this.open(row, provider);
      const listing = await listMcpTools(connection.client, { maxTools: MAX_TOOLS, maxPages: MAX_TOOL_PAGES, timeoutMs: HANDSHAKE_MS });
      if (listing.cut) this.log.info({ connectorId: row.id, reason: listing.cut }, 'connector tool list cut short');
      await this.db.connector.update({
        where: { id: row.id },
        data: { status: 'connected', tools: storable(listing.tools) as object[], lastError: listing.cut ?? null },
      });
      this.rows.delete(row.userId);
      this.keep(row.id, connection);
      return { status: 'connected' };
    } catch (error) {
      await connection?.close().catch(() => undefined);
      if (error instanceof UnauthorizedError && provider.authorizationUrl && provider.currentState) {
        const ticket = randomBytes(32).toString('base64url');
        await this.db.connectorFlow.create({
          data: {
            connectorId: row.id,
            userId: row.userId,
            ticketHash: digest(ticket),
            browserHash: browser === undefined ? null : digest(browser),
            stateHash: digest(provider.currentState),
            requestEncrypted: this.box.seal(JSON.stringify({ url: provider.authorizationUrl.href, verifier: provider.codeVerifier() })),
            expiresAt: new Date(Date.now() + SIGN_IN_TTL_MS),
          },
        });
        // Links nobody opened in time go as new ones are made.
        await this.db.connectorFlow.deleteMany({ where: { connectorId: row.id, expiresAt: { lt: new Date() } } });
        await this.settled(row.id);
        await this.db.connector.update({ where: { id: row.id }, data: { status: 'needs_auth' } });
        this.rows.delete(row.userId);
        return { status: 'needs_auth', ticket };
      }
      const reason = describeFetchError(error);
      this.log.info({ connectorId: row.id, reason }, 'connector did not connect');
      await this.db.connector.update({ where: { id: row.id }, data: { status: 'error', lastError: reason } }).catch(() => undefined);
      return { status: 'error', error: reason };
    }
  }

  private keep(connectorId: string, connection: McpConnection): void {
    this.drop(connectorId);
    this.pool.set(connectorId, Promise.resolve(connection));
    this.lastUsed.set(connectorId, Date.now());
  }

  /**
   * A new connection whose transport failing (the server gone, its stream cut for good) closes it,
   * so that calls in flight on it fail at once instead of waiting out their timeout.
   */
  private async open(row: Row, provider: ConnectorOAuth): Promise<McpConnection> {
    let made: McpConnection | undefined;
    const connection = await connectMcp(new URL(row.url), {
      fetch: this.fetch,
      authProvider: provider,
      timeoutMs: HANDSHAKE_MS,
      onBroken: (error) => {
        // The SDK reports a refused token here too, before the call it refused fails with it:
        // that call's own failure (`call`) closes the connection and asks for a new sign-in.
        if (!made || error instanceof UnauthorizedError) return;
        this.log.info({ connectorId: row.id, reason: error.message }, 'connector connection broke');
        const broken = made;
        made = undefined;
        void this.pool.get(row.id)?.then((pooled) => {
          if (pooled === broken) this.pool.delete(row.id);
        });
        void broken.close().catch(() => undefined);
      },
    });
    made = connection;
    return connection;
  }

  /** The pooled connection of a connected connector, made when missing. */
  private connection(row: Row): Promise<McpConnection> {
    this.lastUsed.set(row.id, Date.now());
    let pending = this.pool.get(row.id);
    if (!pending) {
      pending = this.open(row, this.oauth(this.stored(row), row.id));
      this.pool.set(row.id, pending);
      pending.catch(() => {
        if (this.pool.get(row.id) === pending) this.pool.delete(row.id);
      });
    }
    return pending;
  }

  /** Closes a pooled connection: calls in flight on it fail at once. */
  private drop(connectorId: string): void {
    const pending = this.pool.get(connectorId);
    this.pool.delete(connectorId);
    this.lastUsed.delete(connectorId);
    void pending?.then((connection) => connection.close()).catch(() => undefined);
  }

  /** RFC 7009, where the authorization server names a revocation endpoint; the refresh token first (it takes the access token along). */
  private async revoke(stored: StoredAuth): Promise<void> {
    const endpoint = (stored.discovery?.authorizationServerMetadata as { revocation_endpoint?: string } | undefined)?.revocation_endpoint;
    const token = stored.tokens?.refresh_token ?? stored.tokens?.access_token;
    if (!endpoint || !token || !stored.client) return;
    const body = new URLSearchParams({ token, client_id: stored.client.client_id });
    const secret = (stored.client as { client_secret?: string }).client_secret;
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (secret)
      headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(stored.client.client_id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
    await this.fetch(endpoint, { method: 'POST', headers, body, signal: AbortSignal.timeout(5_000) });
  }
}

const signInFailed = (detail: string) => new AppError(400, 'CONNECTOR_SIGN_IN_FAILED', detail);

function listed(row: Row): ListedTool[] {
  return Array.isArray(row.tools) ? (row.tools as unknown as ListedTool[]) : [];
}

/** What is kept of a server's tool list: bounded descriptions, no oversized schemas. */
function storable(tools: ListedTool[]): ListedTool[] {
  return tools
    .filter(
      (tool) => typeof tool.name === 'string' && tool.name.length <= 128 && Buffer.byteLength(JSON.stringify(tool.input_schema ?? {})) <= MAX_SCHEMA_BYTES,
    )
    .map((tool) => ({ name: tool.name, description: tool.description.slice(0, MAX_DESCRIPTION), input_schema: tool.input_schema ?? { type: 'object' } }));
}

function view(row: Row): ConnectorView {
  const disabled = new Set(row.disabledTools);
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    status: row.status as ConnectorStatus,
    tools: listed(row).map((tool) => ({ name: tool.name, description: tool.description, enabled: !disabled.has(tool.name) })),
    ...(row.lastError ? { error: row.lastError } : {}),
  };
}
