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
  for (const name of PROMPT_FILES) {
    try {
      const { absolute: file } = await resolveWorkspacePath(opts.workspace, name);
      let text = await readFile(file, 'utf8');
      if (text.length > FILE_MAX_CHARS) text = `${text.slice(0, FILE_MAX_CHARS)}\n…(truncated)`;
      if (text.trim()) parts.push(`## ${name}\n${text.trim()}`);
    } catch {
      // absent or refused: skipped
    }
  }
  return parts.join('\n\n');
}
