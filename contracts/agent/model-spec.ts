/**
 * `MODEL` syntax (kept free of provider imports so config.ts can validate it cheaply):
 * - `openai-compatible:<base_url>#<model>` — Ollama, vLLM, llama.cpp, LM Studio, OpenRouter…
 * - `openai:<model>` — OpenAI (OPENAI_API_KEY, optional OPENAI_BASE_URL)
 * - `anthropic:<model>` — Anthropic (ANTHROPIC_API_KEY)
 */
export type ModelSpec =
  | { provider: 'openai-compatible'; baseURL: string; modelId: string }
  | { provider: 'openai'; modelId: string }
  | { provider: 'anthropic'; modelId: string };

export function parseModelSpec(value: string): ModelSpec {
  const colon = value.indexOf(':');
  const provider = colon > 0 ? value.slice(0, colon) : '';
  const rest = value.slice(colon + 1);
  if (provider === 'openai-compatible') {
    const hash = rest.lastIndexOf('#');
    const baseURL = hash > 0 ? rest.slice(0, hash) : '';
    const modelId = hash > 0 ? rest.slice(hash + 1) : '';
    let url: URL | undefined;
    try {
      url = new URL(baseURL);
    } catch {
      url = undefined;
    }
    if (!url || !/^https?:$/.test(url.protocol) || !modelId) {
      throw new Error('openai-compatible needs `openai-compatible:<http(s) base url>#<model>`');
    }
    return { provider, baseURL: baseURL.replace(/\/+$/, ''), modelId };
  }
  if ((provider === 'openai' || provider === 'anthropic') && rest.trim()) return { provider, modelId: rest.trim() };
  throw new Error('must be `openai-compatible:<base_url>#<model>`, `openai:<model>` or `anthropic:<model>`');
}
