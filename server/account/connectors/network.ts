/**
 * Where connectors may be, and the one way this service reaches them: a fetch whose every
 * connection (the MCP server, its authorization server, each redirect) is checked at connect.
 * Names are resolved once and the answer checked and used as is (addresses.ts `checkedLookup`, no
 * DNS rebinding between the check and the connect); IP literals, which need no lookup, are checked
 * before connecting. Cloud metadata addresses are refused always; other non-public addresses
 * unless CONNECTORS_ALLOW_PRIVATE=1 (development and tests).
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { checkedLookup, classifyAddress, describeAddress, RefusedAddress } from '../../common/addresses.js';
import { AppError } from '../../common/errors.js';
import type { ConnectorsConfig } from './config.js';

export type AddressRules = Pick<ConnectorsConfig, 'allowPrivate' | 'allowOrigins'> & {
  /** This service's own origin (BASE_URL): never a connector. */
  selfOrigin: string;
};

/** Whether the rules let a connection go to `address`. */
export function addressAllowed(address: string, allowPrivate: boolean): boolean {
  const verdict = classifyAddress(address).class;
  if (verdict === 'cloud-metadata') return false;
  return allowPrivate || verdict === 'public';
}

const refused = (detail: string) => new AppError(400, 'CONNECTOR_URL_REFUSED', detail);

/**
 * The URL a user gave, checked before anything is stored: http(s) only (https unless private
 * addresses are allowed: the token travels in it), no credentials in it, on an allowed origin, not
 * this service, and its host resolving to allowed addresses only. Answers the normalised URL.
 */
export async function checkConnectorUrl(text: string, rules: AddressRules): Promise<URL> {
  const url = URL.parse(text);
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) throw refused('A connector is an http(s) URL');
  if (url.protocol === 'http:' && !rules.allowPrivate) throw refused('A connector must be an https URL (its token travels in each request)');
  if (url.username || url.password) throw refused('A connector URL carries no user name or password');
  url.hash = '';
  if (rules.allowOrigins.length > 0 && !rules.allowOrigins.includes(url.origin))
    throw refused(`${url.origin} is not among the origins this service allows connectors at`);
  if (url.origin === rules.selfOrigin) throw refused('A connector cannot be this service itself');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host)
    ? [host]
    : await lookup(host, { all: true, verbatim: true }).then(
        (found) => found.map((entry) => entry.address),
        () => {
          throw refused(`${host} does not resolve`);
        },
      );
  const bad = addresses.find((address) => !addressAllowed(address, rules.allowPrivate));
  if (bad !== undefined) throw refused(`${describeAddress(bad, host)}, not a public address`);
  return url;
}

/**
 * How much of a connector's servers' answers this service reads (docs/connectors.md, Bounds): of
 * one answer to an MCP request (a POST's, JSON or event stream, whole) and of one event of an MCP
 * GET stream (long-lived, so bounded per event, not in all), the tool-result limit and a margin for
 * the envelope, escaping and progress notifications; of any other answer (OAuth metadata, client
 * registration, tokens) a little.
 */
interface AnswerLimits {
  messageBytes: number;
  otherBytes: number;
}
const MESSAGE_MARGIN_BYTES = 2 ** 20;
const OTHER_ANSWER_BYTES = 256 * 1024;
/**
 * How long any other answer may take, whole: an authorization server trickling its metadata or
 * token answer a byte at a time would otherwise hold a sign-in (and its socket) for minutes. MCP
 * requests have the call timeout (connectors.ts) and GET streams live as long as their connection.
 */
const OTHER_ANSWER_MS = 30_000;

/** An answer cut off at its limit. */
class AnswerTooLarge extends Error {}

/**
 * A fetch for everything a connector makes this service send. Each connection is checked where it
 * is made, so a redirect or an authorization server the connector names cannot lead elsewhere; each
 * answer is counted as it arrives and cut off past its limit, before the MCP client holds it all.
 */
export function connectorFetch(allowPrivate: boolean, resultMaxBytes: number, connectTimeoutMs = 10_000, otherAnswerMs = OTHER_ANSWER_MS): typeof fetch {
  const limits: AnswerLimits = { messageBytes: resultMaxBytes + MESSAGE_MARGIN_BYTES, otherBytes: OTHER_ANSWER_BYTES };
  const allowed = (address: string) => addressAllowed(address, allowPrivate);
  const connect = buildConnector({ timeout: connectTimeoutMs, lookup: checkedLookup(allowed) } as buildConnector.BuildOptions);
  const dispatcher = new Agent({
    connect: (options, callback) => {
      const host = options.hostname.replace(/^\[|\]$/g, '');
      if (isIP(host) && !allowed(host)) return callback(new RefusedAddress(host, host), null);
      connect(options, callback);
    },
    // Idle upstream connections are kept briefly: a tool call reuses the last one's (bench/connectors.ts).
    keepAliveTimeout: 10_000,
  });
  // The MCP client hands every request of a session the session's one long-lived signal, and
  // undici keeps an abort listener on it per request until the request is garbage-collected: a
  // pooled session passed 1,500 of them (MaxListenersExceededWarning in the log) within a few
  // thousand calls. A signal of its own per request, following the session's, keeps the session's
  // list empty (AbortSignal.any holds its followers weakly).
  return (async (input: string | URL | Request, init?: RequestInit) => {
    // The MCP transports' requests are the ones that accept an event stream (the SDK's OAuth
    // requests ask for JSON); a server cannot choose which bounds apply to it.
    const mcp = new Headers(init?.headers).get('accept')?.includes('text/event-stream') === true;
    const signals = [...(init?.signal ? [init.signal] : []), ...(mcp ? [] : [AbortSignal.timeout(otherAnswerMs)])];
    const response = await undiciFetch(input as Parameters<typeof undiciFetch>[0], {
      ...(init as Parameters<typeof undiciFetch>[1]),
      ...(signals.length ? { signal: AbortSignal.any(signals) } : {}),
      dispatcher,
    });
    return bounded(response as unknown as Response, init, mcp ? limits.messageBytes : limits.otherBytes, mcp);
  }) as unknown as typeof fetch;
}

/** The response with its body counted against `limit`: an MCP GET stream's per event, any other answer in all. */
function bounded(response: Response, init: RequestInit | undefined, limit: number, mcp: boolean): Response {
  if (!response.body) return response;
  const stream =
    mcp && (init?.method ?? 'GET').toUpperCase() === 'GET' && response.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase() === 'text/event-stream';
  const counted = new Response(response.body.pipeThrough(stream ? perEvent(limit) : inAll(limit)), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  // The SDK judges redirects by where the answer came from.
  Object.defineProperties(counted, { url: { value: response.url }, redirected: { value: response.redirected } });
  return counted;
}

const inWords = (bytes: number) => (bytes >= 2 ** 20 ? `${+(bytes / 2 ** 20).toFixed(1)} MB` : `${+(bytes / 1024).toFixed(1)} KB`);

function inAll(limit: number): TransformStream<Uint8Array, Uint8Array> {
  let size = 0;
  return new TransformStream({
    transform(chunk, controller) {
      size += chunk.byteLength;
      if (size > limit) controller.error(new AnswerTooLarge(`the server's answer passed ${inWords(limit)}, the most this service reads of one`));
      else controller.enqueue(chunk);
    },
  });
}

/** Bytes of each server-sent event, from the blank line that ended the one before (CR, LF or CRLF line ends). */
function perEvent(limit: number): TransformStream<Uint8Array, Uint8Array> {
  let size = 0;
  let lineEmpty = true;
  let afterCr = false;
  return new TransformStream({
    transform(chunk, controller) {
      for (let at = 0; at < chunk.length; at++) {
        const byte = chunk[at];
        if (byte === 0x0a && afterCr) {
          afterCr = false;
          continue;
        }
        afterCr = byte === 0x0d;
        if (byte === 0x0a || byte === 0x0d) {
          if (lineEmpty) size = 0;
          lineEmpty = true;
          continue;
        }
        lineEmpty = false;
        if (++size > limit) {
          controller.error(new AnswerTooLarge(`one message of the server's stream passed ${inWords(limit)}, the most this service reads of one`));
          return;
        }
      }
      controller.enqueue(chunk);
    },
  });
}

/** A fetch failure in words: the refused address or the limit an answer passed when that was the cause. */
export function describeFetchError(error: unknown): string {
  let cause: unknown = error;
  for (let depth = 0; cause && depth < 5; depth++) {
    if (cause instanceof RefusedAddress || cause instanceof AnswerTooLarge) return cause.message;
    cause = (cause as { cause?: unknown }).cause;
  }
  return error instanceof Error ? error.message.split('\n')[0]!.slice(0, 300) : String(error);
}
