/**
 * The workspace's disk quota (AGENT_WORKSPACE_QUOTA_MB; the account service gives guests a
 * smaller one). Uploads and the file tools check it before they write, `exec` after each command
 * (its single files are also bounded by an rlimit of the quota's size). Usage is measured by
 * walking the tree, without following links, each time it is asked: no counter can drift from
 * what is on disk, and a tree of more than MAX_ENTRIES entries counts as full (a flood of empty
 * files exhausts inodes, not bytes).
 */
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../common/errors.js';

export const MAX_ENTRIES = 100_000;

export interface QuotaUsage {
  bytes: number;
  entries: number;
}

export const quotaExceeded = (limitBytes: number) =>
  new AppError(507, 'QUOTA_EXCEEDED', `The workspace is full (its quota is ${Math.round(limitBytes / 1024 / 1024)} MB); delete files to make room`);

export class WorkspaceQuota {
  constructor(
    readonly workspace: string,
    readonly limitBytes: number,
  ) {}

  /** Bytes on disk and entries, stopping early once either is past its limit. */
  async usage(): Promise<QuotaUsage> {
    const usage: QuotaUsage = { bytes: 0, entries: 0 };
    const pending = [this.workspace];
    while (pending.length && usage.bytes <= this.limitBytes && usage.entries <= MAX_ENTRIES) {
      const dir = pending.pop() as string;
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const entry of entries) {
        usage.entries += 1;
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) pending.push(file);
        else {
          const info = await lstat(file).catch(() => undefined);
          // Allocated blocks, not the apparent size: a sparse file costs what it occupies.
          if (info) usage.bytes += Math.min(info.size, info.blocks * 512);
        }
      }
    }
    return usage;
  }

  /** Bytes that may still be written; 0 when over. */
  async remaining(): Promise<number> {
    const usage = await this.usage();
    return usage.entries > MAX_ENTRIES ? 0 : Math.max(0, this.limitBytes - usage.bytes);
  }

  /** Throws 507 QUOTA_EXCEEDED unless `bytes` more fit. */
  async ensureRoom(bytes: number): Promise<void> {
    const remaining = await this.remaining();
    if (bytes > remaining || remaining === 0) throw quotaExceeded(this.limitBytes);
  }
}
