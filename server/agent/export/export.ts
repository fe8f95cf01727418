/**
 * `GET /export`: the agent to take away, as one zip (docs/api.md, "Export"):
 * - `workspace/…`: every regular file of the workspace, as the file API would serve it (no
 *   symbolic links followed, no protected names such as `.env`, no upload in progress), up to the
 *   workspace quota in bytes: a workspace over its quota (an `exec` command can overshoot it) is
 *   exported up to it, and the files left out are listed in the manifest;
 * - `chats/<chat id>.jsonl`: every chat's whole history, one stored entry a line, oldest first
 *   (compactions included, with `covers_to`);
 * - `tasks.json`: the scheduled tasks; `manifest.json`: what the zip holds.
 *
 * Streamed: files are read as the zip is written, and history in pages of rows, so the export
 * never holds the workspace or a chat in memory, and a slow reader holds back the reading
 * (backpressure) instead of filling buffers. The history is read with short keyset queries, not
 * one open cursor: the connection it shares with the chat runtime's writes is never held.
 */
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { Database, Statement } from 'better-sqlite3';
import type { Task } from '@contracts/agent/tasks.js';
import { isSensitiveName } from '../files/guard.js';
import { isHiddenFromTree } from '../files/tree.js';
import { MAX_ENTRIES } from '../files/quota.js';

/** History rows read per query. */
const PAGE_ROWS = 500;

export interface ExportSource {
  name: string;
  workspace: string;
  /** The workspace quota: the most bytes of files the zip carries. */
  quotaBytes: number;
  sql: Database;
  tasks(): Promise<Task[]>;
  now?: Date;
}

interface WorkspaceFile {
  absolute: string;
  relative: string;
  size: number;
  mtime: Date;
}

/** Regular files under the workspace, depth first in name order, never through a link. */
async function* walk(root: string, dir = ''): AsyncGenerator<WorkspaceFile> {
  const entries = await readdir(path.join(root, dir), { withFileTypes: true }).catch(() => []);
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    if (isSensitiveName(entry.name) || isHiddenFromTree(entry.name)) continue;
    const relative = dir ? `${dir}/${entry.name}` : entry.name;
    const absolute = path.join(root, relative);
    if (entry.isDirectory()) yield* walk(root, relative);
    else if (entry.isFile()) {
      const info = await lstat(absolute).catch(() => undefined);
      if (info?.isFile()) yield { absolute, relative, size: info.size, mtime: info.mtime };
    }
  }
}

type HistoryRow = Record<string, unknown> & { id: number };

/** A chat's history as JSONL, a page of rows at a time. */
function chatLines(rowsAfter: Statement<[string, number, number], HistoryRow>, chatId: string): Readable {
  let after = 0;
  return new Readable({
    read() {
      const rows = rowsAfter.all(chatId, after, PAGE_ROWS);
      if (!rows.length) {
        this.push(null);
        return;
      }
      after = rows.at(-1)!.id;
      this.push(rows.map((row) => `${JSON.stringify(row)}\n`).join(''));
    },
  });
}

/** The zip as a stream; errors while it is written end the stream with that error. */
export async function exportZip(source: ExportSource): Promise<Readable> {
  const { ZipFile } = await import('yazl');
  const zip = new ZipFile();
  const now = source.now ?? new Date();
  const included: string[] = [];
  const omitted: string[] = [];
  let bytes = 0;
  let entries = 0;
  for await (const file of walk(source.workspace)) {
    if (bytes + file.size > source.quotaBytes || entries >= MAX_ENTRIES) {
      omitted.push(file.relative);
      continue;
    }
    bytes += file.size;
    entries++;
    included.push(file.relative);
    zip.addFile(file.absolute, `workspace/${file.relative}`, { mtime: file.mtime });
  }

  const chatIds = source.sql.prepare('SELECT DISTINCT chat_id AS chatId FROM chat_messages ORDER BY chat_id').all() as Array<{ chatId: string }>;
  const rowsAfter = source.sql.prepare<[string, number, number], HistoryRow>(
    `SELECT id, run_id, type, name, content, tool_name, input, path, cut, covers_to, created_at
     FROM chat_messages WHERE chat_id = ? AND id > ? ORDER BY id LIMIT ?`,
  );
  const chats = chatIds.map(({ chatId }) => ({ chat_id: chatId, file: `chats/${encodeURIComponent(chatId)}.jsonl` }));
  for (const chat of chats) zip.addReadStreamLazy(chat.file, { mtime: now }, (done) => done(null, chatLines(rowsAfter, chat.chat_id)));

  const tasks = await source.tasks();
  zip.addBuffer(Buffer.from(`${JSON.stringify({ tasks }, null, 2)}\n`), 'tasks.json', { mtime: now });
  const manifest = {
    format: 1,
    agent: source.name,
    exported_at: now.toISOString(),
    workspace: { files: included.length, bytes, omitted_over_quota: omitted },
    chats,
    tasks: tasks.length,
  };
  zip.addBuffer(Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`), 'manifest.json', { mtime: now });
  zip.end();
  const output = zip.outputStream as Readable;
  // A file that fails to read mid-way (removed meanwhile) ends the download as an error, not a short zip.
  zip.on('error', (error: Error) => output.destroy(error));
  return output;
}
