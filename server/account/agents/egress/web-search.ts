/**
 * The search providers `web_search` goes to (WEB_SEARCH): a self-hosted SearXNG's JSON API, the
 * Brave Search API or Tavily. The gateway calls them itself with the operator's key
 * (BRAVE_API_KEY, TAVILY_API_KEY), so no agent ever holds one, and reduces each provider's answer
 * to title, URL and snippet. The provider's address is the operator's choice, not an agent's: it
 * is not held to the web tools' address rules (a SearXNG on the operator's own network is usual).
 */
import type { WebSearchResults, WebSearchRequest, WebSearchResult } from '@contracts/agent/web.js';
import { z } from 'zod';
import { AppError } from '../../../common/errors.js';

export type SearchProviderKind = 'searxng' | 'brave' | 'tavily';

export interface SearchProvider {
  kind: SearchProviderKind;
  /** The API's base URL: SearXNG's own; Brave's and Tavily's official one unless the setting names another (a proxy, a test). */
  baseUrl: string;
}

const DEFAULT_BASE: Record<Exclude<SearchProviderKind, 'searxng'>, string> = {
  brave: 'https://api.search.brave.com',
  tavily: 'https://api.tavily.com',
};

/** `searxng:<url>`, `brave`, `tavily` (each optionally `:<url>` of another endpoint); throws a message for anything else. */
export function parseSearchSetting(value: string): SearchProvider {
  const colon = value.indexOf(':');
  const kind = colon < 0 ? value : value.slice(0, colon);
  const rest = colon < 0 ? '' : value.slice(colon + 1);
  if (kind !== 'searxng' && kind !== 'brave' && kind !== 'tavily') throw new Error('must be searxng:<url>, brave or tavily');
  if (kind === 'searxng' && !rest) throw new Error('searxng needs its URL: searxng:http://searxng.internal:8080');
  const baseUrl = rest || DEFAULT_BASE[kind as Exclude<SearchProviderKind, 'searxng'>];
  const url = URL.parse(baseUrl);
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new Error(`${baseUrl} is not an http(s) URL`);
  return { kind, baseUrl: baseUrl.replace(/\/+$/, '') };
}

const SNIPPET_MAX = 500;
const DEFAULT_COUNT = 5;

/** Snippets of some providers carry highlighting markup (`<strong>`); the model gets plain text. */
const plain = (text: string | undefined) =>
  (text ?? '')
    .replace(/<[^>]*>/g, '')
    .replace(/&(amp|lt|gt|quot|#39);/g, (_m, name: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[name] ?? '')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, SNIPPET_MAX);

// What each provider answers, as far as it is read (their documented JSON; unknown fields ignored).
const SearxngAnswer = z.object({ results: z.array(z.object({ title: z.string().optional(), url: z.string(), content: z.string().optional() })) });
const BraveAnswer = z.object({
  web: z.object({ results: z.array(z.object({ title: z.string().optional(), url: z.string(), description: z.string().optional() })) }).optional(),
});
const TavilyAnswer = z.object({ results: z.array(z.object({ title: z.string().optional(), url: z.string(), content: z.string().optional() })) });

export async function searchWeb(
  provider: SearchProvider,
  keys: { brave?: string; tavily?: string },
  input: WebSearchRequest,
  signal: AbortSignal,
): Promise<WebSearchResults> {
  const count = input.count ?? DEFAULT_COUNT;
  let found: Array<{ title?: string | undefined; url: string; snippet?: string | undefined }>;
  if (provider.kind === 'searxng') {
    const url = `${provider.baseUrl}/search?${new URLSearchParams({ q: input.query, format: 'json' })}`;
    const answer = SearxngAnswer.safeParse(await call(url, { headers: { accept: 'application/json' }, signal }));
    found = answer.data?.results.map((r) => ({ title: r.title, url: r.url, snippet: r.content })) ?? unreadable(provider);
  } else if (provider.kind === 'brave') {
    const url = `${provider.baseUrl}/res/v1/web/search?${new URLSearchParams({ q: input.query, count: String(count) })}`;
    const headers: Record<string, string> = { accept: 'application/json', ...(keys.brave ? { 'x-subscription-token': keys.brave } : {}) };
    const answer = BraveAnswer.safeParse(await call(url, { headers, signal }));
    found = answer.success ? (answer.data.web?.results.map((r) => ({ title: r.title, url: r.url, snippet: r.description })) ?? []) : unreadable(provider);
  } else {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(keys.tavily ? { authorization: `Bearer ${keys.tavily}` } : {}) };
    const body = JSON.stringify({ query: input.query, max_results: count, search_depth: 'basic' });
    const answer = TavilyAnswer.safeParse(await call(`${provider.baseUrl}/search`, { method: 'POST', headers, body, signal }));
    found = answer.data?.results.map((r) => ({ title: r.title, url: r.url, snippet: r.content })) ?? unreadable(provider);
  }
  const results: WebSearchResult[] = found
    .filter((r) => /^https?:\/\//i.test(r.url))
    .slice(0, count)
    .map((r) => ({ title: plain(r.title) || r.url, url: r.url.slice(0, 2048), snippet: plain(r.snippet) }));
  return { provider: provider.kind, results };
}

function unreadable(provider: SearchProvider): never {
  throw new AppError(502, 'WEB_SEARCH_FAILED', `${provider.kind} answered JSON the gateway could not read as results`);
}

/** One provider call; its answer's JSON (at most 2 MB), or an AppError naming the provider's status. */
async function call(url: string, init: RequestInit): Promise<unknown> {
  const res = await fetch(url, init);
  if (!res.ok) {
    await res.body?.cancel();
    throw new AppError(502, 'WEB_SEARCH_FAILED', `The search provider answered ${res.status}`);
  }
  const text = await res.text();
  if (text.length > 2 * 1024 * 1024) throw new AppError(502, 'WEB_SEARCH_FAILED', 'The search provider answered more than 2 MB');
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError(502, 'WEB_SEARCH_FAILED', 'The search provider did not answer JSON');
  }
}
