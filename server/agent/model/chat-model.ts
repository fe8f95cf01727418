/**
 * What the loop drives: one streamed model call. Its own module, so the clients that implement it
 * (model.ts, openai-compatible.ts) need not import each other.
 */
import type { LanguageModelV3CallOptions, LanguageModelV3StreamPart } from '@ai-sdk/provider';

/**
 * Rejects before streaming when the call fails (an error with `statusCode`, `isRetryable`,
 * `responseHeaders` where known, as the AI SDK's `APICallError` has); errors met while streaming
 * arrive as `error` parts.
 */
export interface ChatModel {
  stream(options: LanguageModelV3CallOptions): Promise<AsyncIterable<LanguageModelV3StreamPart>>;
}
