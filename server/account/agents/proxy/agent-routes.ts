/**
 * Which agent route a proxied request names, in the agent's documented spelling only
 * (docs/security.md, "One spelling per agent path"). The policy used to read the raw path while
 * the agent's router was case-insensitive and trailing-slash tolerant, so `/CHAT`, `/chat/` or
 * `/chat/x/STREAM` reached the guarded routes without their guest rules. Now a path is matched
 * byte for byte against the REST routes the route table proxies (contracts/agent/routes.ts): literal segments
 * exactly, parameters as one non-empty segment of URI path characters (a raw `\` is none) that
 * does not decode to a dot segment, a `/` or a control character. What matches is forwarded as it
 * came (so the agent, whose routing is as strict, lands on the same route); anything else never
 * reaches it.
 */
import { AGENT_REST_ROUTES, type AgentRestRoute } from '@contracts/agent/routes.js';

/** One path segment of RFC 3986 `pchar`s: unreserved, sub-delims, `:`, `@` and `%XX`. */
const SEGMENT = /^(?:[\w\-.~!$&'()*+,;=:@]|%[\dA-Fa-f]{2})+$/;

function isParameterSegment(raw: string): boolean {
  if (!SEGMENT.test(raw)) return false;
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return false; // not UTF-8
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
  return decoded !== '.' && decoded !== '..' && !/[/\u0000-\u001f\u007f]/.test(decoded);
}

interface CompiledRoute {
  route: AgentRestRoute;
  /** Literal segments as strings, parameters as null. */
  segments: Array<string | null>;
}

const COMPILED: CompiledRoute[] = AGENT_REST_ROUTES.map((route) => ({
  route,
  segments: route.path
    .slice(1)
    .split('/')
    .map((segment) => (/^\{\w+\}$/.test(segment) ? null : segment)),
}));

function matches({ route, segments }: CompiledRoute, raw: string[]): boolean {
  // A spanning parameter (`spans`) is the last template segment and takes one or more raw ones.
  const fixed = route.spans ? segments.length - 1 : segments.length;
  if (route.spans ? raw.length <= fixed : raw.length !== fixed) return false;
  return raw.every((segment, i) => {
    const expected = i < fixed ? segments[i] : null;
    return expected === null ? isParameterSegment(segment) : segment === expected;
  });
}

export type AgentRouteMatch = { route: AgentRestRoute } | { allowed: string[] } | undefined;

/**
 * The route `method rawPath` names (`rawPath`: the path as sent, without the query); `allowed`
 * when the path is a route's but the method is not (405 with `Allow`); undefined otherwise. HEAD
 * is served as GET (as express does), so it is matched, and guarded, as GET.
 */
export function matchAgentRoute(method: string, rawPath: string): AgentRouteMatch {
  if (!rawPath.startsWith('/')) return undefined;
  const raw = rawPath.slice(1).split('/');
  const asked = method === 'HEAD' ? 'GET' : method;
  const allowed: string[] = [];
  for (const compiled of COMPILED) {
    if (!matches(compiled, raw)) continue;
    if (compiled.route.method === asked) return { route: compiled.route };
    allowed.push(compiled.route.method);
  }
  if (allowed.includes('GET')) allowed.push('HEAD');
  return allowed.length ? { allowed: [...new Set(allowed)].sort() } : undefined;
}
