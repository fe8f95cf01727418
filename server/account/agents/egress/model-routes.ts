/**
 * Which requests to the model origin the egress gateway forwards, and so which ones get the
 * operator's model key: the generation calls it meters, nothing else. A provider key opens far
 * more than generation (OpenAI's files, batches, fine-tunes and assistants; Anthropic's message
 * batches): a GET or DELETE of those costs no token the gateway could count, and a batch or a
 * fine-tune spends the operator's money outside every budget. So the model origin answers only
 * `POST …/chat/completions`, `…/completions`, `…/messages` and `…/responses`, spelt one way, and
 * every other method or path there is 403 EGRESS_ROUTE_REFUSED (docs/security.md, "The model key
 * opens only generation").
 *
 * One spelling: the path is plain segments of unreserved characters (RFC 3986) with no dot
 * segment, no percent-encoding and no query, so the gateway and the model server cannot read it
 * as two different endpoints (`/v1/files/..%2Fchat/completions`, `/v1/batches?/chat/completions`).
 */

/** A generation endpoint the gateway forwards to the model origin, and the field it reads its output ceiling from. */
export interface GenerationEndpoint {
  ceilingField: 'max_tokens' | 'max_output_tokens';
}

const ENDPOINTS: Array<{ last: RegExp; endpoint: GenerationEndpoint }> = [
  { last: /\/responses$/, endpoint: { ceilingField: 'max_output_tokens' } },
  { last: /\/(chat\/completions|completions|messages)$/, endpoint: { ceilingField: 'max_tokens' } },
];

/** Segments of unreserved characters that do not start with a dot (so none is `.` or `..`). */
const PLAIN_PATH = /^(\/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)+$/;

/** The generation endpoint `method path` calls on the model origin, or undefined: refused there. */
export function generationEndpoint(method: string | undefined, path: string | undefined): GenerationEndpoint | undefined {
  if (method !== 'POST' || !path || !PLAIN_PATH.test(path)) return undefined;
  return ENDPOINTS.find((entry) => entry.last.test(path))?.endpoint;
}
