/**
 * The agent's web tools as its egress gateway answers them (docs/agent.md, "Web tools"): the
 * agent has no network of its own, so `web_fetch` and `web_search` are requests to the gateway's
 * own host (`GATEWAY_SELF_HOST`), which checks the address, follows redirects, caps the answer and
 * adds the search provider's key. The agent turns what comes back into what the model reads.
 *
 * `POST /web/fetch` answers with the page's bytes as they came (at most `WEB_FETCH_MAX_BYTES`),
 * its type in `content-type` and what happened in the `x-web-*` headers; `POST /web/search` with
 * `WebSearchResults`. A refusal is `{error: {code, message}}` with the code's status, and the
 * message names the reason ("10.0.0.5 is a private network address").
 */
import { z } from 'zod';

export const WEB_FETCH_PATH = '/web/fetch';
export const WEB_SEARCH_PATH = '/web/search';

/** What the gateway reads of one page at most; the rest is cut and `x-web-truncated` says so. */
export const WEB_FETCH_MAX_BYTES = 5 * 1024 * 1024;

/** The tools an agent is offered, as the account service tells it (AGENT_WEB_TOOLS). */
export const WEB_TOOLS = ['fetch', 'search'] as const;
export type WebToolName = (typeof WEB_TOOLS)[number];

export const WebFetchRequest = z.object({
  url: z.string().min(1).max(8192),
});
export type WebFetchRequest = z.infer<typeof WebFetchRequest>;

/** Headers of a `/web/fetch` answer besides `content-type`. */
export const WEB_FETCH_HEADERS = {
  /** The page's own status (the gateway's is 200 whenever a page answered). */
  status: 'x-web-status',
  /** The URL the answer came from, after redirects. */
  url: 'x-web-url',
  /** `1` when the body was cut at `WEB_FETCH_MAX_BYTES`. */
  truncated: 'x-web-truncated',
} as const;

export const WEB_SEARCH_MAX_RESULTS = 20;

export const WebSearchRequest = z.object({
  query: z.string().trim().min(1).max(400),
  count: z.number().int().min(1).max(WEB_SEARCH_MAX_RESULTS).optional(),
});
export type WebSearchRequest = z.infer<typeof WebSearchRequest>;

export const WebSearchResult = z.object({
  title: z.string(),
  url: z.string(),
  snippet: z.string(),
});
export type WebSearchResult = z.infer<typeof WebSearchResult>;

export const WebSearchResults = z.object({
  /** Which provider answered (`searxng`, `brave`, `tavily`). */
  provider: z.string(),
  results: z.array(WebSearchResult),
});
export type WebSearchResults = z.infer<typeof WebSearchResults>;
