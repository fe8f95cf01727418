/** The language model `MODEL` selects, built on the Vercel AI SDK providers. */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { ModelSpec } from './model-spec.js';

/** The provider interface the loop drives (`doStream`), whichever provider made it. */
export type ChatModel = LanguageModelV3;

export function createLanguageModel(spec: ModelSpec, opts: { apiKey?: string } = {}): ChatModel {
  switch (spec.provider) {
    case 'openai-compatible':
      return createOpenAICompatible({ name: 'openai-compatible', baseURL: spec.baseURL, apiKey: opts.apiKey, includeUsage: true }).chatModel(spec.modelId);
    case 'openai':
      return createOpenAI({})(spec.modelId);
    case 'anthropic':
      return createAnthropic({})(spec.modelId);
  }
}

export const NO_MODEL_REPLY =
  'No model is configured for this agent, so it cannot answer yet. Set MODEL (for example `openai-compatible:http://127.0.0.1:11434/v1#llama3.2`) and restart it.';
