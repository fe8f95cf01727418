/**
 * The system prompt of a chat run: who the agent is, today's date, how the workspace and tools
 * work, then the workspace's own instruction files when present (AGENTS.md, SOUL.md, USER.md,
 * MEMORY.md), each bounded. A Telegram contact who is not the owner gets the agent's persona
 * (AGENTS.md, SOUL.md) but not what it knows about its owner (USER.md, MEMORY.md).
 */
import { readFile } from 'node:fs/promises';
import { resolveWorkspacePath } from '../files/guard.js';
import type { ContactAudience } from './runs.js';

export const PROMPT_FILES = ['AGENTS.md', 'SOUL.md', 'USER.md', 'MEMORY.md'];
/** The owner's own files: never in a contact's prompt. */
const OWNER_FILES = new Set(['USER.md', 'MEMORY.md']);
const FILE_MAX_CHARS = 16_000;

export async function buildSystemPrompt(opts: {
  name: string;
  workspace: string;
  toolNames: string[];
  now?: Date;
  contact?: ContactAudience;
}): Promise<string> {
  const now = opts.now ?? new Date();
  const parts = [
    `You are ${opts.name}, a personal agent. Today is ${now.toISOString().slice(0, 10)} (UTC time ${now.toISOString().slice(11, 16)}).`,
    ...(opts.contact
      ? [
          `You are talking on Telegram with ${JSON.stringify(opts.contact.name)}, a person your owner allowed to write to you, not your owner. Do not share your owner's files, conversations or personal details with them.`,
        ]
      : []),
    'You have a workspace: a directory of files that persists between conversations. Every path you give a tool is relative to it; paths outside it and protected files (.env, agent.db) are refused.',
    opts.toolNames.length ? `Tools: ${opts.toolNames.join(', ')}. Use send_file to give the user a file.` : 'You have no tools in this conversation.',
    'Answer plainly and briefly unless asked otherwise.',
  ];
  const files = await readPromptFiles(opts.workspace);
  return [...parts, ...(opts.contact ? files.filter((file) => !OWNER_FILES.has(file.name)) : files).map((file) => file.text)].join('\n\n');
}

interface PromptFile {
  name: string;
  text: string;
}

async function readAll(workspace: string): Promise<PromptFile[]> {
  const sections: PromptFile[] = [];
  for (const name of PROMPT_FILES) {
    try {
      const { absolute: file } = await resolveWorkspacePath(workspace, name);
      let text = await readFile(file, 'utf8');
      if (text.length > FILE_MAX_CHARS) text = `${text.slice(0, FILE_MAX_CHARS)}\n…(truncated)`;
      if (text.trim()) sections.push({ name, text: `## ${name}\n${text.trim()}` });
    } catch {
      // absent or refused: skipped
    }
  }
  return sections;
}

interface Reads {
  running?: Promise<PromptFile[]>;
  queued?: Promise<PromptFile[]>;
}
const readsByWorkspace = new Map<string, Reads>();

/**
 * The instruction files, read once for all the runs that start together (hundreds of chats at a
 * time each paid four guarded reads). A caller always gets a read that began after its call, so
 * it sees every write made before it: while one read runs, all new callers share the next one.
 */
function readPromptFiles(workspace: string): Promise<PromptFile[]> {
  let reads = readsByWorkspace.get(workspace);
  if (!reads) readsByWorkspace.set(workspace, (reads = {}));
  const state = reads;
  const start = () => {
    const running = readAll(workspace).finally(() => {
      if (state.running === running) state.running = undefined;
      if (!state.running && !state.queued) readsByWorkspace.delete(workspace);
    });
    state.running = running;
    return running;
  };
  if (!state.running) return start();
  state.queued ??= state.running.then(() => {
    state.queued = undefined;
    return start();
  });
  return state.queued;
}
