/**
 * The model `MODEL` selects, as the chat runtime, subagents and heartbeats hold it from start: a
 * `ChatModel` whose client (model.ts: the AI SDK providers or our OpenAI-compatible client) is
 * made at its first call. Loading the providers is a good part of an agent's start otherwise
 * (docs/performance.md, "An agent's start"), and an agent that answers /health, lists chats or
 * serves files never needs them.
 */
import type { ModelSpec } from '@contracts/agent/model-spec.js';
import type { EgressGatewayAddress } from '../net/egress.js';
import type { ChatModel } from './chat-model.js';

export function configuredModel(spec: ModelSpec, opts: { apiKey?: string; egress?: EgressGatewayAddress }): ChatModel {
  let model: Promise<ChatModel> | undefined;
  return {
    async stream(options) {
      model ??= import('./model.js').then(({ createLanguageModel }) => createLanguageModel(spec, opts));
      return (await model).stream(options);
    },
  };
}

/** Every reply of an agent without a model. */
export const NO_MODEL_REPLY =
  'No model is configured for this agent, so it cannot answer yet. Set MODEL (for example `openai-compatible:http://127.0.0.1:11434/v1#llama3.2`) and restart it.';
