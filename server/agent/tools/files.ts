/** Workspace file tools: read_file, write_file, list_files, send_file. All go through the path guard. */
import { appendFile, mkdir, open, readdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { AppError } from '../../common/errors.js';
import { defineTool, type AgentToolSet } from './types.js';
import { isSensitiveName, resolveWorkspacePath } from '../files/guard.js';
import type { WorkspaceQuota } from '../files/quota.js';

export const READ_MAX_BYTES = 100_000;
export const WRITE_MAX_CHARS = 1_000_000;
const LIST_MAX_ENTRIES = 500;
const LIST_SKIP = new Set(['.git', 'node_modules', '__pycache__']);

const RelPath = z.string().min(1).max(1024).describe('Workspace-relative path');

export function fileTools(workspace: string, quota: WorkspaceQuota): AgentToolSet {
  return {
    read_file: defineTool({
      description: `Read a text file of the workspace (at most ${READ_MAX_BYTES} bytes are returned).`,
      inputSchema: z.object({ path: RelPath }),
      async execute({ path: rel }) {
        const { absolute: file } = await resolveWorkspacePath(workspace, rel);
        const info = await stat(file).catch(() => undefined);
        if (!info) throw new AppError(404, 'NOT_FOUND', `No such file: ${rel}`);
        if (!info.isFile()) throw new AppError(400, 'NOT_A_FILE', `${rel} is not a file`);
        const handle = await open(file, 'r');
        try {
          const buffer = Buffer.alloc(Math.min(info.size, READ_MAX_BYTES));
          const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
          const bytes = buffer.subarray(0, bytesRead);
          if (bytes.includes(0)) return `(binary file, ${info.size} bytes)`;
          const text = bytes.toString('utf8');
          return info.size > READ_MAX_BYTES ? `${text}\n…(truncated: ${info.size} bytes in all)` : text;
        } finally {
          await handle.close();
        }
      },
    }),

    write_file: defineTool({
      description: 'Write (or append to) a text file of the workspace; parent directories are created.',
      inputSchema: z.object({
        path: RelPath,
        content: z.string().max(WRITE_MAX_CHARS),
        append: z.boolean().optional().describe('Append instead of replacing'),
      }),
      async execute({ path: rel, content, append }) {
        const target = await resolveWorkspacePath(workspace, rel, { forWrite: true });
        const file = target.absolute;
        const info = await stat(file).catch(() => undefined);
        if (info?.isDirectory()) throw new AppError(400, 'NOT_A_FILE', `${rel} is a directory`);
        const reservation = await quota.reserve(Buffer.byteLength(content));
        try {
          await mkdir(path.dirname(file), { recursive: true });
          // Re-check after creating parents: nothing may have turned the target into an escape.
          const checked = await resolveWorkspacePath(workspace, rel, { forWrite: true });
          if (checked.absolute !== file) throw new AppError(403, 'FORBIDDEN_PATH', 'Path changed while writing');
          await (append ? appendFile(file, content, 'utf8') : writeFile(file, content, 'utf8'));
          return `wrote ${Buffer.byteLength(content)} bytes to ${target.relative}`;
        } finally {
          // Counted even when the write failed part-way: erring towards full, until the next walk.
          reservation.commit();
        }
      },
    }),

    list_files: defineTool({
      description: 'List files and directories of the workspace (directories end with /).',
      inputSchema: z.object({
        path: z.string().max(1024).optional().describe('Workspace-relative directory, default the root'),
        depth: z.number().int().min(1).max(5).optional().describe('How deep to descend, default 2'),
      }),
      async execute({ path: rel, depth }) {
        const { absolute: dir } = await resolveWorkspacePath(workspace, rel ?? '.');
        const info = await stat(dir).catch(() => undefined);
        if (!info?.isDirectory()) throw new AppError(404, 'NOT_FOUND', `No such directory: ${rel ?? '.'}`);
        const lines: string[] = [];
        const walk = async (abs: string, prefix: string, left: number): Promise<void> => {
          const entries = (await readdir(abs, { withFileTypes: true }))
            .filter((e) => !isSensitiveName(e.name) && !LIST_SKIP.has(e.name))
            .sort((a, b) => Number(b.isDirectory()) - Number(a.isDirectory()) || a.name.localeCompare(b.name));
          for (const entry of entries) {
            if (lines.length >= LIST_MAX_ENTRIES) return;
            const shown = `${prefix}${entry.name}`;
            if (entry.isDirectory()) {
              lines.push(`${shown}/`);
              if (left > 1) await walk(path.join(abs, entry.name), `${shown}/`, left - 1);
            } else {
              const size = await stat(path.join(abs, entry.name)).then(
                (s) => s.size,
                () => 0,
              );
              lines.push(`${shown} (${size} bytes)`);
            }
          }
        };
        await walk(dir, '', depth ?? 2);
        if (lines.length >= LIST_MAX_ENTRIES) lines.push(`…(stopped at ${LIST_MAX_ENTRIES} entries)`);
        return lines.length ? lines.join('\n') : '(empty)';
      },
    }),

    send_file: defineTool({
      description: 'Send a workspace file to the user, with an optional caption.',
      inputSchema: z.object({ path: RelPath, caption: z.string().max(2000).optional() }),
      async execute({ path: rel, caption }, ctx) {
        const { absolute: file, relative: shown } = await resolveWorkspacePath(workspace, rel);
        const info = await stat(file).catch(() => undefined);
        if (!info?.isFile()) throw new AppError(404, 'NOT_FOUND', `No such file: ${rel}`);
        ctx.emit({ type: 'file', path: shown, caption: caption ?? '' });
        return `sent ${shown} to the user`;
      },
    }),
  };
}
