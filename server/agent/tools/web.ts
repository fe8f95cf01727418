/**
 * `web_fetch` and `web_search` (docs/agent.md, "Web tools"). The agent reaches no network of its
 * own: both are requests to its egress gateway's own host (contracts/agent/web.ts), which judges
 * the address, follows redirects, caps the size and time and adds the search provider's key. Here
 * the page that came back becomes what the model reads (web-page.ts: HTML as Markdown, a PDF's
 * text), bounded to `max_chars`. Offered only when the account service says the gateway answers
 * them (AGENT_WEB_TOOLS), so a standalone agent, with no gateway to judge its addresses, has
 * neither.
 */
import { GATEWAY_SELF_HOST } from '@contracts/agent/model-source.js';
import {
  WEB_FETCH_HEADERS,
  WEB_FETCH_MAX_BYTES,
  WEB_FETCH_PATH,
  WEB_SEARCH_MAX_RESULTS,
  WEB_SEARCH_PATH,
  WebSearchResults,
  type WebToolName,
} from '@contracts/agent/web.js';
import { isErrorCode } from '@contracts/errors.js';
import { z } from 'zod';
import { AppError } from '../../common/errors.js';
import { gatewayFetch, type EgressGatewayAddress } from '../net/egress.js';
import { defineTool, type AgentToolSet } from './types.js';

export const WEB_FETCH_DEFAULT_CHARS = 20_000;
export const WEB_FETCH_MAX_CHARS = 100_000;

export function webTools(egress: EgressGatewayAddress, offered: readonly WebToolName[]): AgentToolSet {
  const gateway = gatewayFetch(egress);
  const ask = async (path: string, body: unknown, signal: AbortSignal) => {
    const res = await gateway(`http://${GATEWAY_SELF_HOST}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal,
    });
    if (res.ok) return res;
    // The gateway's refusal names its reason; the model reads it as the tool's error.
    const answer = (await res.json().catch(() => undefined)) as { error?: { code?: unknown; message?: unknown } } | undefined;
    const code = isErrorCode(answer?.error?.code) ? answer.error.code : 'EGRESS_UPSTREAM_FAILED';
    throw new AppError(res.status, code, typeof answer?.error?.message === 'string' ? answer.error.message : `The egress gateway answered ${res.status}`);
  };
  const tools: AgentToolSet = {};
  if (offered.includes('fetch'))
    tools.web_fetch = defineTool({
      description:
        'Fetch a web page (http or https) and read it: HTML comes back as Markdown of its main content, text and JSON as they are, a PDF as its text. Only public addresses; the answer names why a URL was refused.',
      inputSchema: z.object({
        url: z.string().min(1).max(8192).describe('The http(s) URL'),
        max_chars: z
          .number()
          .int()
          .min(100)
          .max(WEB_FETCH_MAX_CHARS)
          .optional()
          .describe(`Characters of the page to return, default ${WEB_FETCH_DEFAULT_CHARS}`),
      }),
      async execute({ url, max_chars }, ctx) {
        const res = await ask(WEB_FETCH_PATH, { url }, ctx.signal);
        const { bytes, cut } = await readAll(res);
        const { readPage } = await import('./web-page.js');
        const page = await readPage(bytes, res.headers.get('content-type') ?? '', res.headers.get(WEB_FETCH_HEADERS.url) ?? url, { signal: ctx.signal });
        const limit = max_chars ?? WEB_FETCH_DEFAULT_CHARS;
        const notes = [
          bytes.length >= WEB_FETCH_MAX_BYTES ? `the page was cut at ${WEB_FETCH_MAX_BYTES} bytes` : '',
          cut ? 'the page was still arriving at the time limit; this is what came' : '',
          ...(page.notes ?? []),
          page.text.length > limit ? `${page.text.length} characters in all; ask with a larger max_chars for more` : '',
        ].filter(Boolean);
        return [
          `URL: ${res.headers.get(WEB_FETCH_HEADERS.url) ?? url}`,
          `Status: ${res.headers.get(WEB_FETCH_HEADERS.status) ?? '?'}`,
          ...(page.title ? [`Title: ${page.title}`] : []),
          '',
          page.text.slice(0, limit),
          ...(notes.length ? ['', `(${notes.join('; ')})`] : []),
        ].join('\n');
      },
    });
  if (offered.includes('search'))
    tools.web_search = defineTool({
      description: 'Search the web; returns results as title, URL and snippet. Read a result with web_fetch.',
      inputSchema: z.object({
        query: z.string().trim().min(1).max(400),
        count: z.number().int().min(1).max(WEB_SEARCH_MAX_RESULTS).optional().describe('How many results, default 5'),
      }),
      async execute({ query, count }, ctx) {
        const res = await ask(WEB_SEARCH_PATH, { query, ...(count ? { count } : {}) }, ctx.signal);
        const { results } = WebSearchResults.parse(await res.json());
        if (results.length === 0) return `No results for "${query}".`;
        return results.map((r, i) => `${i + 1}. ${r.title}\n   ${r.url}\n   ${r.snippet}`).join('\n\n');
      },
    });
  return tools;
}

/** The whole body as far as it came: the gateway cuts one that is still arriving at its time limit. */
async function readAll(res: Response): Promise<{ bytes: Buffer; cut: boolean }> {
  const chunks: Uint8Array[] = [];
  const reader = res.body?.getReader();
  if (!reader) return { bytes: Buffer.alloc(0), cut: false };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { bytes: Buffer.concat(chunks), cut: false };
      chunks.push(value);
    }
  } catch (error) {
    if (chunks.length === 0) throw new AppError(504, 'WEB_TIMEOUT', `The page did not arrive: ${(error as Error).message}`);
    return { bytes: Buffer.concat(chunks), cut: true };
  }
}
