/**
 * The agents' web tools on the egress gateway (docs/security.md, "The web tools"): `web_fetch`
 * and `web_search` are requests to the gateway's own host (contracts/agent/web.ts), and this is
 * where the outside web is reached for them. An agent never opens a connection of its own; what a
 * page, a prompt injection or a hostile tenant makes it ask for is judged here:
 *
 * - only `http:` and `https:` URLs without userinfo; the WHATWG parser reads the host first, so
 *   `2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`, `[::ffff:127.0.0.1]` and trailing dots all
 *   arrive as the address they spell, and are judged as that address;
 * - the operator's domain lists (AGENT_WEB_ALLOW_DOMAINS, AGENT_WEB_DENY_DOMAINS) and this
 *   service's own names (BASE_URL, FRONTEND_URL) before any resolution;
 * - every address the name resolves to must be public (server/common/addresses.ts) and none of
 *   this machine's own interfaces; the connection goes to exactly the address that was checked
 *   (`checkedLookup`), so DNS rebinding has no second answer to give, and the socket's peer is
 *   checked once more when it connects;
 * - redirects are followed here, one by one, each new URL judged as the first (AGENT_WEB_MAX_REDIRECTS);
 * - the whole fetch has a time cap (AGENT_WEB_TIMEOUT) and the body a size cap
 *   (WEB_FETCH_MAX_BYTES, counted after decompression), and it streams to the agent rather than
 *   being held here;
 * - each user's fetches and searches per UTC day are counted and written to their activity log
 *   (web-ledger.ts) before anything leaves.
 *
 * A refusal names its reason ("db.example resolves to 10.0.0.5, a private network address").
 * AGENT_WEB_TEST_PUBLIC lists `address:port` pairs treated as public: for tests and development
 * on one machine only; it never opens a cloud-metadata address or this service's own ports.
 */
import http from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import os from 'node:os';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import {
  WEB_FETCH_HEADERS,
  WEB_FETCH_MAX_BYTES,
  WEB_FETCH_PATH,
  WEB_SEARCH_PATH,
  WebFetchRequest,
  WebSearchRequest,
  type WebToolName,
} from '@contracts/agent/web.js';
import { ERRORS, type ErrorCode } from '@contracts/errors.js';
import { RefusedAddress, checkedLookup, classifyAddress, describeAddress, isPublicAddress } from '../../../common/addresses.js';
import { AppError } from '../../../common/errors.js';
import type { Logger } from '../../../common/log.js';
import { searchWeb, type SearchProvider } from './web-search.js';

/** The operator's web policy (agents/config.ts `web`). */
export interface WebPolicy {
  enabled: boolean;
  /** Domains a fetch may go to (each with its subdomains); empty: any public one. */
  allowDomains: string[];
  /** Domains a fetch never goes to (each with its subdomains); wins over the allow list. */
  denyDomains: string[];
  search: SearchProvider | undefined;
  timeoutMs: number;
  maxRedirects: number;
  /** `address:port` pairs treated as public (AGENT_WEB_TEST_PUBLIC): tests and development only. */
  testPublic: string[];
}

/** Who this service is, so that no fetch reaches it: its ports (any local address) and its public names. */
export interface OwnService {
  ports: number[];
  hosts: string[];
}

/** Counts a user's fetches and searches per day and writes each to their activity log; throws AppError 429 past the day's count. */
export interface WebLedger {
  admit(userId: string, tool: WebToolName, detail: Record<string, string>): Promise<void>;
}

/** How a web tool call ended, for metrics. */
export type WebOutcome = 'ok' | 'refused' | 'limited' | 'failed';

export interface WebToolsOptions {
  ledger?: WebLedger;
  /** Each call, by tool and outcome, with its time until the answer began. */
  observe?: (tool: WebToolName, outcome: WebOutcome, seconds: number) => void;
  /** Search providers' keys, added here and nowhere else. */
  keys?: { brave?: string; tavily?: string };
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const USER_AGENT = 'agent-accounts-web/0.1 (fetching for a user of an AI agent service)';
const ACCEPT = 'text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,text/*;q=0.8,application/pdf;q=0.5,*/*;q=0.1';
const REQUEST_BODY_MAX = 16 * 1024;

/** Every address of this machine's interfaces, read when the gateway starts. */
function interfaceAddresses(): Set<string> {
  const found = new Set<string>();
  for (const list of Object.values(os.networkInterfaces())) for (const entry of list ?? []) found.add(entry.address.replace(/%.*$/, '').toLowerCase());
  return found;
}

const bareHost = (hostname: string) =>
  hostname
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.+$/, '')
    .toLowerCase();

const hostPort = (host: string, port: number) => `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;

const inDomains = (host: string, domains: string[]) => domains.some((domain) => host === domain || host.endsWith(`.${domain}`));

export class WebTools {
  private readonly own: { ports: Set<number>; hosts: Set<string>; addresses: Set<string> };
  private readonly testPublic: Set<string>;

  constructor(
    private readonly policy: WebPolicy,
    own: OwnService,
    private readonly log: Logger,
    private readonly options: WebToolsOptions = {},
  ) {
    this.own = { ports: new Set(own.ports), hosts: new Set(own.hosts.map(bareHost)), addresses: interfaceAddresses() };
    this.testPublic = new Set(policy.testPublic.map((entry) => entry.toLowerCase()));
  }

  /** The tools agents are offered (AGENT_WEB_TOOLS): none when off, search only with a provider. */
  get offered(): WebToolName[] {
    if (!this.policy.enabled) return [];
    return this.policy.search ? ['fetch', 'search'] : ['fetch'];
  }

  /** Whether a request to the gateway's own host is one of ours. */
  handles(path: string | undefined): boolean {
    const bare = path?.split('?')[0];
    return bare === WEB_FETCH_PATH || bare === WEB_SEARCH_PATH;
  }

  /** Answers one web tool request of a user's agent (the gateway has taken its slot). */
  async answer(req: http.IncomingMessage, res: http.ServerResponse, userId: string | undefined): Promise<void> {
    const tool: WebToolName = req.url?.split('?')[0] === WEB_SEARCH_PATH ? 'search' : 'fetch';
    const started = performance.now();
    let outcome: WebOutcome = 'ok';
    try {
      if (req.method !== 'POST') throw webError('METHOD_NOT_ALLOWED', `${req.url} takes POST`);
      if (!this.policy.enabled) throw webError('WEB_DISABLED');
      if (!userId) throw webError('EGRESS_DENIED', "The web tools serve a user's agent");
      const body = await readJson(req);
      // The time cap, or the agent gone (its run stopped): either ends the fetch or search at once.
      const gone = new AbortController();
      const abort = AbortSignal.any([AbortSignal.timeout(this.policy.timeoutMs), gone.signal]);
      // An answer cut off (the time cap, the agent gone) is a failure, however well it began.
      res.once('close', () => {
        gone.abort();
        if (!res.writableFinished && outcome === 'ok') outcome = 'failed';
      });
      if (tool === 'search') await this.search(WebSearchRequest.parse(body), userId, res, abort);
      else await this.fetchPage(WebFetchRequest.parse(body).url, userId, res, abort);
    } catch (error) {
      const known = asAppError(error);
      outcome = known.status === 429 ? 'limited' : known.status < 500 ? 'refused' : 'failed';
      if (known.status >= 500) this.log.info({ tool, reason: known.message }, 'web tool call failed');
      if (res.headersSent) res.destroy();
      else deny(res, known.status, known.appCode, known.message);
    } finally {
      this.options.observe?.(tool, outcome, (performance.now() - started) / 1000);
    }
  }

  private async search(input: WebSearchRequest, userId: string, res: http.ServerResponse, signal: AbortSignal): Promise<void> {
    const provider = this.policy.search;
    if (!provider) throw webError('WEB_SEARCH_NOT_CONFIGURED');
    await this.options.ledger?.admit(userId, 'search', { query: input.query.slice(0, 400), provider: provider.kind });
    const results = await searchWeb(provider, this.options.keys ?? {}, input, signal).catch((error: unknown) => {
      if (signal.aborted) throw webError('WEB_TIMEOUT', `The search provider did not answer within ${this.policy.timeoutMs / 1000} s`);
      throw error;
    });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(results));
  }

  /**
   * Why `url` may not be fetched (an AppError), or the URL and the address rule its connection
   * must pass: checked again for every redirect.
   */
  check(raw: string): { url: URL; allowed: (address: string) => boolean } {
    const url = URL.parse(raw);
    if (!url) throw webError('WEB_URL_REFUSED', `Not a URL: ${raw.slice(0, 200)}`);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw webError('WEB_URL_REFUSED', `${url.protocol} URLs are not fetched: only http and https`);
    if (url.username || url.password) throw webError('WEB_URL_REFUSED', 'URLs with a user name or password are not fetched');
    const host = bareHost(url.hostname);
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    // By name here; an address (literal or resolved) is judged with its port in `refusal`. A test
    // page beside the service (AGENT_WEB_TEST_PUBLIC) may share its host name, never its port.
    if (!isIP(host) && this.own.hosts.has(host) && !this.testPublic.has(hostPort(host, port)))
      throw webError('WEB_ADDRESS_REFUSED', `${host} is this service itself`);
    if (inDomains(host, this.policy.denyDomains)) throw webError('WEB_DOMAIN_REFUSED', `${host} is on the operator's deny list`);
    if (this.policy.allowDomains.length > 0 && !inDomains(host, this.policy.allowDomains))
      throw webError('WEB_DOMAIN_REFUSED', `${host} is not on the operator's allow list`);
    const allowed = (address: string) => this.refusal(address, port) === undefined;
    if (isIP(host)) {
      const why = this.refusal(host, port);
      if (why) throw webError('WEB_ADDRESS_REFUSED', `${why}, not a public address`);
    }
    return { url, allowed };
  }

  /** Why a connection to `address:port` is refused, or undefined when it may be made. */
  private refusal(address: string, port: number): string | undefined {
    const bare = address.toLowerCase();
    const verdict = classifyAddress(bare);
    // Cloud metadata is never opened, and this service's ports on this machine never, whatever the test setting says.
    if (verdict.class === 'cloud-metadata') return describeAddress(bare, bare, verdict);
    const local = this.own.addresses.has(bare) || verdict.class === 'loopback' || verdict.class === 'unspecified';
    if (local && this.own.ports.has(port)) return `${address} port ${port} is this service itself`;
    if (this.testPublic.has(hostPort(bare, port))) return undefined;
    if (!isPublicAddress(bare)) return describeAddress(bare, bare, verdict);
    if (this.own.addresses.has(bare)) return `${address} is an address of this machine`;
    return undefined;
  }

  private async fetchPage(raw: string, userId: string, res: http.ServerResponse, signal: AbortSignal): Promise<void> {
    let target = this.check(raw);
    await this.options.ledger?.admit(userId, 'fetch', { url: target.url.href.slice(0, 2048) });
    for (let redirects = 0; ; redirects++) {
      const answer = await this.get(target, signal);
      const status = answer.statusCode ?? 502;
      const location = answer.headers.location;
      if (REDIRECTS.has(status) && location) {
        answer.destroy();
        if (redirects >= this.policy.maxRedirects)
          throw webError('WEB_TOO_MANY_REDIRECTS', `More than ${this.policy.maxRedirects} redirects from ${raw.slice(0, 200)}`);
        const next = URL.parse(location, target.url);
        if (!next) throw webError('WEB_FETCH_FAILED', `${target.url.host} redirected to something that is not a URL`);
        try {
          target = this.check(next.href);
        } catch (error) {
          const known = asAppError(error);
          throw new AppError(known.status, known.appCode, `${target.url.href} redirected to ${next.href.slice(0, 200)}: ${known.message}`);
        }
        continue;
      }
      return this.relay(answer, target.url, res, signal);
    }
  }

  /** One GET, its connection pinned to a checked address. */
  private get(target: { url: URL; allowed: (address: string) => boolean }, signal: AbortSignal): Promise<http.IncomingMessage> {
    const { url, allowed } = target;
    return new Promise((resolve, reject) => {
      const request = (url.protocol === 'https:' ? https : http).request(url, {
        method: 'GET',
        headers: { 'user-agent': USER_AGENT, accept: ACCEPT, 'accept-encoding': 'gzip, deflate, br' },
        lookup: checkedLookup(allowed),
        signal,
        agent: false,
      });
      // What the socket really connected to is judged once more (defence in depth behind the pinned lookup).
      request.once('socket', (socket: Socket) => {
        socket.once('connect', () => {
          const peer = socket.remoteAddress?.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, '$1');
          if (peer && !allowed(peer)) request.destroy(new RefusedAddress(url.hostname, peer));
        });
      });
      request.once('response', resolve);
      request.once('error', (error) => reject(this.fetchError(error, url, signal)));
      request.end();
    });
  }

  private fetchError(error: Error, url: URL, signal: AbortSignal): AppError {
    if (error instanceof RefusedAddress) return webError('WEB_ADDRESS_REFUSED', error.message);
    if (signal.aborted) return webError('WEB_TIMEOUT', `${url.host} did not answer within ${this.policy.timeoutMs / 1000} s`);
    const code = (error as NodeJS.ErrnoException).code;
    return webError('WEB_FETCH_FAILED', `${url.host} could not be reached${code ? ` (${code})` : ''}`);
  }

  /**
   * The page's body to the agent as it arrives, decoded and cut at WEB_FETCH_MAX_BYTES. Past the
   * time cap the answer is cut off (the agent keeps what came, and says so).
   */
  private relay(answer: http.IncomingMessage, url: URL, res: http.ServerResponse, signal: AbortSignal): Promise<void> {
    const encoding = String(answer.headers['content-encoding'] ?? 'identity').toLowerCase();
    const decoder =
      encoding === 'gzip' || encoding === 'x-gzip'
        ? zlib.createGunzip()
        : encoding === 'deflate'
          ? zlib.createInflate()
          : encoding === 'br'
            ? zlib.createBrotliDecompress()
            : undefined;
    const body: Readable = decoder ? answer.pipe(decoder) : answer;
    res.writeHead(200, {
      'content-type': answer.headers['content-type'] ?? 'application/octet-stream',
      [WEB_FETCH_HEADERS.status]: String(answer.statusCode ?? 0),
      [WEB_FETCH_HEADERS.url]: url.href,
    });
    return new Promise((resolve) => {
      let sent = 0;
      const stop = () => {
        answer.destroy();
        decoder?.destroy();
      };
      const onAbort = () => {
        stop();
        res.destroy();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const finish = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      body.on('data', (chunk: Buffer) => {
        const room = WEB_FETCH_MAX_BYTES - sent;
        sent += chunk.length;
        if (chunk.length < room) return void res.write(chunk);
        res.end(chunk.subarray(0, room));
        stop();
      });
      body.once('end', () => res.end());
      body.once('error', () => res.destroy());
      answer.once('error', () => res.destroy());
      res.once('close', () => {
        stop();
        finish();
      });
    });
  }
}

/** An answer of the catalogue's status for `code`, with its own detail or the catalogue's message. */
const webError = (code: ErrorCode, detail = ERRORS[code].message) => new AppError(ERRORS[code].status, code, detail);

function asAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (error instanceof Error && error.name === 'ZodError') return webError('VALIDATION_FAILED', error.message.slice(0, 500));
  return webError('WEB_FETCH_FAILED', error instanceof Error ? error.message : String(error));
}

function deny(res: http.ServerResponse, status: number, code: ErrorCode, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code, message } }));
}

/** A small JSON request body of the agent's (at most 16 KB). */
function readJson(req: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > REQUEST_BODY_MAX) {
        req.removeAllListeners('data');
        req.resume();
        reject(webError('EGRESS_BODY_TOO_LARGE', `A web tool request is at most ${REQUEST_BODY_MAX} bytes`));
      } else chunks.push(chunk);
    });
    req.once('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(webError('MALFORMED_JSON'));
      }
    });
    req.once('error', reject);
  });
}
