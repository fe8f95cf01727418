/**
 * Long chats (docs/agent.md, "Long chats"): when a chat's context nears the model's window, its
 * older turns are summarised by the model into one compaction entry, which the model reads in
 * their place from then on; the entries themselves stay stored (history.ts).
 *
 * Before the summary, the runtime runs a memory flush of its own: a turn that asks the model to
 * write anything durable into MEMORY.md or memory/*.md with the file tools, while the old turns
 * are still in its context. It runs whatever the model did in the chat before (a model that never
 * wrote memory still gets the turn), so what mattered reaches a file before it leaves the context.
 *
 * Tokens are estimated, not counted (a tokenizer per provider would cost more than a run's
 * prompt): about four characters a token, which errs towards compacting early for most text.
 */
import type { Logger } from '../../common/log.js';
import type { AgentToolSet } from '../tools/types.js';
import type { ChatModel } from '../model/chat-model.js';
import type { ModelSource } from '@contracts/agent/model-source.js';
import type { ModelSpec } from '@contracts/agent/model-spec.js';
import type { ChatContext, ChatHistory, ContextTurn } from './history.js';
import { runModelLoop, type ContextMessage } from './loop.js';

/** A window for models we know nothing of: local models often run with 32k. */
const DEFAULT_WINDOW = 32_000;

/** Context windows by model id (the first that matches wins). */
const KNOWN_WINDOWS: ReadonlyArray<[RegExp, number]> = [
  [/^gpt-4\.1/, 1_000_000],
  [/^gpt-5/, 400_000],
  [/^(gpt-4o|gpt-4-turbo|o1|o3|o4)/, 128_000],
  [/^claude-/, 200_000],
  [/^gpt-3\.5/, 16_000],
];

/** The context window the runtime compacts for: `MODEL_CONTEXT_TOKENS`, else known by model id, else 32k. */
export function contextWindowOf(spec: ModelSpec | undefined, configured: number | undefined): number {
  if (configured) return configured;
  const id = spec?.modelId.split('/').at(-1) ?? '';
  return KNOWN_WINDOWS.find(([pattern]) => pattern.test(id))?.[1] ?? DEFAULT_WINDOW;
}

/** About four characters a token, and a few tokens of framing per message. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4) + 4;
}

/** Compaction starts when the prompt would fill this share of the window (the rest is for the reply and tool results). */
const COMPACT_AT = 0.7;
/** The recent turns kept word for word fill at most this share of the window. */
const KEEP_SHARE = 0.3;

/** The context as the model reads it: the summary (as an exchange at the start), then the turns. */
export function contextMessages(context: ChatContext): ContextMessage[] {
  const turns = context.turns.map(({ role, content }) => ({ role, content }));
  if (context.summary === undefined) return turns;
  return [
    { role: 'user', content: `(Earlier messages of this chat, summarised)\n${context.summary}` },
    { role: 'assistant', content: 'Noted: I have the summary of our earlier messages.' },
    ...turns,
  ];
}

/**
 * The turns to summarise, or none when the prompt fits (or nothing older than the last turn
 * could go). The kept turns start at a user message and include the last one (the message being
 * answered), however long.
 */
export function turnsToCompact(system: string, context: ChatContext, window: number): ContextTurn[] {
  const tokens = (turns: ContextTurn[]) => turns.reduce((sum, turn) => sum + estimateTokens(turn.content), 0);
  const total = estimateTokens(system) + estimateTokens(context.summary ?? '') + tokens(context.turns);
  if (total <= window * COMPACT_AT) return [];
  let keepFrom = context.turns.length - 1;
  let kept = tokens(context.turns.slice(keepFrom));
  for (let i = keepFrom - 1; i > 0; i--) {
    kept += estimateTokens(context.turns[i]!.content);
    if (kept > window * KEEP_SHARE) break;
    if (context.turns[i]!.role === 'user') keepFrom = i;
  }
  while (keepFrom > 0 && context.turns[keepFrom]!.role !== 'user') keepFrom--;
  return context.turns.slice(0, keepFrom);
}

/** The runtime's own turn before a compaction; the model answers it with file tools, not to the user. */
export const FLUSH_PROMPT = [
  '(Memory flush, from the agent runtime, not the user.) The older messages of this chat are about to be summarised and leave your context.',
  'Before they do, write anything durable you learned in them (facts about the user, preferences, decisions, commitments, open tasks) into MEMORY.md, or into a file under memory/ for a topic, with write_file (append: true adds to a file).',
  'Keep what the files already say; do not repeat it. If there is nothing worth keeping, answer "nothing to keep". Do not reply to the user.',
].join(' ');

const SUMMARY_SYSTEM = [
  'You summarise the earlier part of a conversation between a user and their personal agent, so that the agent can go on without it.',
  'Keep names, facts, numbers, decisions, requests still open and anything the user asked to remember; leave out small talk.',
  'Write plain prose or short bullet points, at most about 400 words, in the language of the conversation. Answer with the summary only.',
].join(' ');

/** The text the summary is made from: an earlier summary first, then the turns, each labelled. */
function transcript(summary: string | undefined, turns: ContextTurn[]): string {
  const lines = summary === undefined ? [] : [`[Summary of what came before]\n${summary}`];
  for (const turn of turns) lines.push(`[${turn.role === 'user' ? 'User' : 'Agent'}]\n${turn.content}`);
  return lines.join('\n\n');
}

/** The file tools a flush may use: reading and writing the workspace, nothing that reaches out. */
const FLUSH_TOOLS = ['read_file', 'write_file', 'list_files'];

export interface CompactionInput {
  chatId: string;
  runId: string;
  model: ChatModel;
  system: string;
  context: ChatContext;
  /** What the chat turns older than the kept ones are, from turnsToCompact. */
  covered: ContextTurn[];
  tools: AgentToolSet;
  /** False for a contact's chat: what a contact wrote never reaches the owner's memory files. */
  flush: boolean;
  source: ModelSource;
  maxSteps: number;
  maxRetries: number;
  signal: AbortSignal;
  history: ChatHistory;
  log: Logger;
}

/**
 * Flushes memory, then summarises `covered` (with the earlier summary) into a compaction entry.
 * Returns the context the run goes on with: the new summary and the kept turns; without a
 * summary (the model failed), the kept turns alone, and the next run tries again.
 */
export async function compact(input: CompactionInput): Promise<ChatContext> {
  const { context, covered, signal, log } = input;
  const kept = context.turns.slice(covered.length);
  const common = { model: input.model, signal, source: input.source, maxRetries: input.maxRetries, onEvent: () => undefined };
  if (input.flush) {
    const tools = Object.fromEntries(Object.entries(input.tools).filter(([name]) => FLUSH_TOOLS.includes(name)));
    const flushed = await runModelLoop({
      ...common,
      system: input.system,
      messages: [...contextMessages(context), { role: 'user', content: FLUSH_PROMPT }],
      tools,
      maxSteps: input.maxSteps,
    });
    log.info({ chatId: input.chatId, status: flushed.status }, 'memory flush before compaction');
    if (signal.aborted) return { ...context };
  }
  const summarised = await runModelLoop({
    ...common,
    system: SUMMARY_SYSTEM,
    messages: [{ role: 'user', content: transcript(context.summary, covered) }],
    tools: {},
    maxSteps: 1,
  });
  const summary = summarised.text.trim();
  if (summarised.status !== 'completed' || !summary) {
    log.warn({ chatId: input.chatId, status: summarised.status, error: summarised.error }, 'compaction: no summary; older turns left out of this run');
    return context.summary === undefined ? { turns: kept } : { summary: context.summary, turns: kept };
  }
  // Everything before the first kept turn, tool calls and files included.
  await input.history.saveCompaction(input.chatId, input.runId, summary, kept[0]!.firstId - 1);
  return { summary, turns: kept };
}
