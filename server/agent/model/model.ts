/**
 * The language model `MODEL` selects. `openai-compatible:` models are read by our own streaming
 * client (openai-compatible.ts); `openai:` and `anthropic:` by the Vercel AI SDK providers.
 * Loaded at a model's first call (configured.ts).
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModelV3, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { gatewayFetch, type EgressGatewayAddress } from '../net/egress.js';
import type { ChatModel } from './chat-model.js';
import type { ModelSpec } from '@contracts/agent/model-spec.js';
import { openAICompatibleModel } from './openai-compatible.js';

/** An AI SDK provider model as a `ChatModel`. */
export function fromLanguageModel(model: LanguageModelV3): ChatModel {
  // Node's ReadableStream is async-iterable (cancelled when the iteration stops early); the DOM typings omit it.
  return { stream: async (options) => (await model.doStream(options)).stream as unknown as AsyncIterable<LanguageModelV3StreamPart> };
}

/**
 * With an `egress` gateway (a sandboxed agent) the agent holds no provider key: the gateway adds
 * it, so the providers get a placeholder that keeps them from refusing to start without one.
 */
export function createLanguageModel(spec: ModelSpec, opts: { apiKey?: string; egress?: EgressGatewayAddress } = {}): ChatModel {
  const { egress } = opts;
  const viaGateway = egress ? { apiKey: 'added-by-egress-gateway', fetch: gatewayFetch(egress) } : {};
  switch (spec.provider) {
    case 'openai-compatible':
      return openAICompatibleModel({ baseURL: spec.baseURL, modelId: spec.modelId, apiKey: opts.apiKey, egress });
    case 'openai':
      return fromLanguageModel(createOpenAI(viaGateway)(spec.modelId));
    case 'anthropic':
      return fromLanguageModel(createAnthropic(viaGateway)(spec.modelId));
  }
}
