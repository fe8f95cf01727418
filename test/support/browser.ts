/**
 * Just enough of a browser for HTTP-level OAuth tests: follows redirects one hop at a time,
 * keeps cookies (by name and path; Max-Age=0 deletes), and submits the first form of a page.
 * Real-browser behaviour is covered by the Playwright suite; this one makes every hop visible.
 */
export interface Hop {
  url: string;
  status: number;
  location: string | undefined;
  body: string;
}

interface Cookie {
  value: string;
  path: string;
}

export class TestBrowser {
  readonly cookies = new Map<string, Cookie>();
  readonly hops: Hop[] = [];

  constructor(private readonly headers: Record<string, string> = {}) {}

  private cookieHeader(url: URL): string {
    return [...this.cookies]
      .filter(([, c]) => url.pathname.startsWith(c.path))
      .map(([name, c]) => `${name}=${c.value}`)
      .join('; ');
  }

  private remember(res: Response, url: URL): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';').map((s) => s.trim());
      const eq = (pair ?? '').indexOf('=');
      if (!pair || eq <= 0) continue;
      const name = pair.slice(0, eq);
      const path = attrs.find((a) => /^path=/i.test(a))?.slice(5) ?? url.pathname.replace(/\/[^/]*$/, '/');
      if (attrs.some((a) => /^max-age=0$/i.test(a) || /^expires=Thu, 01 Jan 1970/i.test(a))) this.cookies.delete(name);
      else this.cookies.set(name, { value: pair.slice(eq + 1), path });
    }
  }

  /** One request, no redirect following. */
  async request(url: string, init: { method?: string; form?: URLSearchParams; json?: unknown; headers?: Record<string, string> } = {}): Promise<Hop> {
    const target = new URL(url);
    const headers: Record<string, string> = { ...this.headers, ...init.headers, accept: 'text/html,application/json' };
    const cookie = this.cookieHeader(target);
    if (cookie) headers.cookie = cookie;
    if (init.form) headers['content-type'] = 'application/x-www-form-urlencoded';
    if (init.json !== undefined) headers['content-type'] = 'application/json';
    const body = init.form?.toString() ?? (init.json !== undefined ? JSON.stringify(init.json) : undefined);
    const res = await fetch(target, { method: init.method ?? (body !== undefined ? 'POST' : 'GET'), headers, body, redirect: 'manual' });
    this.remember(res, target);
    const location = res.headers.get('location') ?? undefined;
    const hop = { url: target.href, status: res.status, location: location ? new URL(location, target).href : undefined, body: await res.text() };
    this.hops.push(hop);
    return hop;
  }

  /** Follows redirects until a page answers, or until `stopAt(url)` says a redirect target is far enough. */
  async follow(url: string, stopAt: (url: string) => boolean = () => false, init?: { form?: URLSearchParams; headers?: Record<string, string> }): Promise<Hop> {
    let hop = await this.request(url, init);
    for (let i = 0; i < 15 && hop.location && hop.status >= 300 && hop.status < 400; i++) {
      if (stopAt(hop.location)) return hop;
      hop = await this.request(hop.location);
    }
    return hop;
  }

  /** Submits the first form on `page` with its hidden inputs plus `fields`. */
  async submit(page: Hop, fields: Record<string, string>, stopAt?: (url: string) => boolean): Promise<Hop> {
    const form = /<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/i.exec(page.body);
    if (!form) throw new Error(`no form on ${page.url}:\n${page.body.slice(0, 500)}`);
    const data = new URLSearchParams();
    for (const input of (form[2] ?? '').matchAll(/<input[^>]*type="hidden"[^>]*>/gi)) {
      const name = /name="([^"]*)"/.exec(input[0])?.[1];
      const value = /value="([^"]*)"/.exec(input[0])?.[1] ?? '';
      if (name) data.set(name, decodeHtml(value));
    }
    for (const [k, v] of Object.entries(fields)) data.set(k, v);
    return this.follow(new URL(decodeHtml(form[1] ?? ''), page.url).href, stopAt, { form: data });
  }

  /** The href of the link whose text matches. */
  link(page: Hop, text: RegExp): string {
    for (const a of page.body.matchAll(/<a[^>]*href="([^"]+)"[^>]*>([\s\S]*?)<\/a>/gi)) {
      if (text.test(a[2] ?? '')) return new URL(decodeHtml(a[1] ?? ''), page.url).href;
    }
    throw new Error(`no link ${text} on ${page.url}`);
  }
}

function decodeHtml(s: string): string {
  return s
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_, n: string) => String.fromCharCode(parseInt(n, 16)))
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>');
}
