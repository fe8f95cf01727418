/**
 * The system prompt of a chat run: who the agent is, today's date, how the workspace and tools
 * work, then the workspace's own instruction files when present (AGENTS.md, SOUL.md, USER.md,
 * MEMORY.md), each bounded.
 */
import { readFile } from 'node:fs/promises';
import { resolveWorkspacePath } from '../files/guard.js';

export const PROMPT_FILES = ['AGENTS.md', 'SOUL.md', 'USER.md', 'MEMORY.md'];
const FILE_MAX_CHARS = 16_000;

export async function buildSystemPrompt(opts: { name: string; workspace: string; toolNames: string[]; now?: Date }): Promise<string> {
  const now = opts.now ?? new Date();
  const parts = [
    `You are ${opts.name}, a personal agent. Today is ${now.toISOString().slice(0, 10)} (UTC time ${now.toISOString().slice(11, 16)}).`,
    'You have a workspace: a directory of files that persists between conversations. Every path you give a tool is relative to it; paths outside it and protected files (.env, agent.db) are refused.',
    opts.toolNames.length ? `Tools: ${opts.toolNames.join(', ')}. Use send_file to give the user a file.` : 'You have no tools in this conversation.',
    'Answer plainly and briefly unless asked otherwise.',
  ];
  return [...parts, ...(await readPromptFiles(opts.workspace))].join('\n\n');
}

async function readAll(workspace: string): Promise<string[]> {
  const sections: string[] = [];
  for (const name of PROMPT_FILES) {
    try {
      const { absolute: file } = await resolveWorkspacePath(workspace, name);
      let text = await readFile(file, 'utf8');
      if (text.length > FILE_MAX_CHARS) text = `${text.slice(0, FILE_MAX_CHARS)}\n…(truncated)`;
      if (text.trim()) sections.push(`## ${name}\n${text.trim()}`);
    } catch {
      // absent or refused: skipped
    }
  }
  return sections;
}

interface Reads {
  running?: Promise<string[]>;
  queued?: Promise<string[]>;
}
const readsByWorkspace = new Map<string, Reads>();

/**
 * The instruction files, read once for all the runs that start together (hundreds of chats at a
 * time each paid four guarded reads). A caller always gets a read that began after its call, so
 * it sees every write made before it: while one read runs, all new callers share the next one.
 */
function readPromptFiles(workspace: string): Promise<string[]> {
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
