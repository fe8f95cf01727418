/**
 * Wire shapes of the memory files (`/memory`, docs/api.md "Memory"): the two workspace files the
 * agent reads into every owner prompt, `MEMORY.md` (what it keeps, written by the model and by
 * the memory flush before a compaction) and `USER.md` (what it knows of its user). The Memory page
 * of the web client shows, edits and deletes them.
 */
import { z } from 'zod';

export const MEMORY_FILES = ['MEMORY.md', 'USER.md'] as const;
export const MemoryFileName = z.enum(MEMORY_FILES);
export type MemoryFileName = z.infer<typeof MemoryFileName>;

/** The most a memory file may hold through this API (the prompt reads its first 16,000 characters). */
export const MEMORY_MAX_CHARS = 100_000;

export const MemoryNameInput = z.object({ name: MemoryFileName });
export const MemoryWriteInput = z.object({ name: MemoryFileName, content: z.string().max(MEMORY_MAX_CHARS) });
export type MemoryWriteInput = z.infer<typeof MemoryWriteInput>;

export const MemoryFile = z.object({
  name: MemoryFileName,
  /** False: no such file (yet); `content` is then empty. */
  exists: z.boolean(),
  content: z.string(),
  /** Bytes on disk. */
  size: z.number().int(),
  /** The file holds more than `MEMORY_MAX_CHARS`: `content` is its start, and the page does not offer to save over it. */
  truncated: z.boolean(),
  updated_at: z.string().nullable(),
});
export type MemoryFile = z.infer<typeof MemoryFile>;
export const MemoryFiles = z.object({ files: z.array(MemoryFile) });
