/**
 * The workspace's disk quota (AGENT_WORKSPACE_QUOTA_MB; the account service gives guests a
 * smaller one). Uploads and the file tools check it before they write, `exec` after each command
 * (its single files are also bounded by an rlimit of the quota's size). A tree of more than
 * MAX_ENTRIES entries counts as full (a flood of empty files exhausts inodes, not bytes).
 *
 * Usage is measured by walking the tree without following links, stopping once past a limit. A
 * walk is not repeated for every write: the last one is kept, and what the agent writes itself is
 * added to it as it is written. Every writer first reserves its bytes (`reserve`, `take`), and the
 * check and the reservation happen in one synchronous step, so parallel uploads and writes share
 * what is left instead of each seeing all of it. The tree is walked again when the last walk is
 * older than REWALK_AFTER_MS, while and after anything the agent cannot count runs (an `exec`
 * command: `untracked`), and before any refusal that rests on counted rather than measured bytes (a
 * replaced file is counted twice until then), so a refusal is always confirmed on disk.
 */
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../common/errors.js';

export const MAX_ENTRIES = 100_000;
/** Bytes and entries that change outside the agent's sight (none should) are seen after this long. */
export const REWALK_AFTER_MS = 60_000;

export interface QuotaUsage {
  bytes: number;
  entries: number;
}

export const quotaExceeded = (limitBytes: number) =>
  new AppError(507, 'QUOTA_EXCEEDED', `The workspace is full (its quota is ${Math.round(limitBytes / 1024 / 1024)} MB); delete files to make room`);

/** Bytes held for one write in progress; settle it exactly once, when the write is done or failed. */
export interface QuotaReservation {
  /** Holds `bytes` more, or throws 507 QUOTA_EXCEEDED (for writes whose size shows as they stream). */
  take(bytes: number): Promise<void>;
  /** Where the bytes are staged now (an upload's temporary file): walks skip it, as its bytes are held here. */
  stagedAt(file: string): void;
  /** The bytes are on disk now: they count as used until the next walk measures them. */
  commit(): void;
  /** Nothing (more) was written: the bytes are free again. */
  release(): void;
}

interface Measured {
  usage: QuotaUsage;
  at: number;
  /** Bytes added since the walk by writes the agent counted itself. */
  counted: number;
}

export class WorkspaceQuota {
  private measured: Measured | undefined;
  /** One walk at a time; callers that arrive during it share it. */
  private walking: Promise<Measured> | undefined;
  /** Bytes reserved by writes in progress. */
  private reserved = 0;
  /** Staged files of writes in progress: their bytes are in `reserved`, so a walk skips them. */
  private readonly staging = new Set<string>();
  /** Exec commands running: the last walk cannot be trusted while they write. */
  private untrackedWriters = 0;
  /** Bytes committed while a walk was under way, which it may have missed: the walk's result counts them. */
  private committedDuringWalk = 0;

  constructor(
    readonly workspace: string,
    readonly limitBytes: number,
  ) {}

  /** Bytes that may still be written, 0 when over; `fresh` walks the tree first. */
  async remaining(opts: { fresh?: boolean } = {}): Promise<number> {
    if (opts.fresh) await this.walk();
    return this.room(await this.current());
  }

  /**
   * Runs `write`, which changes the tree in ways the agent cannot count (an exec command): while it
   * runs every check walks the tree, and after it one walk tells what is left.
   */
  async untracked<T>(write: () => Promise<T>): Promise<{ value: T; remaining: number }> {
    this.untrackedWriters++;
    try {
      const value = await write();
      return { value, remaining: await this.remaining({ fresh: true }) };
    } finally {
      this.untrackedWriters--;
    }
  }

  /** Throws 507 QUOTA_EXCEEDED unless `bytes` more fit; else holds them until the write settles. */
  async reserve(bytes: number): Promise<QuotaReservation> {
    const reservation = this.reservation();
    await reservation.take(bytes);
    return reservation;
  }

  /** A reservation that grows as a write streams (uploads): starts empty. */
  reservation(): QuotaReservation {
    let held = 0;
    let settled = false;
    let staged: string | undefined;
    const settle = (committed: boolean) => {
      if (settled) return;
      settled = true;
      this.reserved -= held;
      if (staged) this.staging.delete(staged);
      if (!committed) return;
      if (this.measured) this.measured.counted += held;
      if (this.walking) this.committedDuringWalk += held;
    };
    return {
      take: async (bytes) => {
        if (settled) throw new Error('quota reservation already settled');
        if (!(await this.hold(bytes))) throw quotaExceeded(this.limitBytes);
        held += bytes;
      },
      stagedAt: (file) => {
        if (staged) this.staging.delete(staged);
        staged = settled ? undefined : file;
        if (staged) this.staging.add(staged);
      },
      commit: () => settle(true),
      release: () => settle(false),
    };
  }

  /**
   * Reserves `bytes` if they fit, checking and reserving in one synchronous step after the last
   * await, so that no other writer slips in between; a refusal on counted bytes is checked again
   * on a fresh walk.
   */
  private async hold(bytes: number): Promise<boolean> {
    const fits = (measured: Measured) => {
      const room = this.room(measured);
      if (room === 0 || bytes > room) return false;
      this.reserved += bytes;
      return true;
    };
    const last = await this.current();
    if (fits(last)) return true;
    return last.counted > 0 && fits(await this.walk());
  }

  private room(measured: Measured): number {
    if (measured.usage.entries > MAX_ENTRIES) return 0;
    return Math.max(0, this.limitBytes - measured.usage.bytes - measured.counted - this.reserved);
  }

  /** The last walk while it is recent, else a new one. */
  private async current(): Promise<Measured> {
    const last = this.measured;
    if (last && !this.untrackedWriters && Date.now() - last.at < REWALK_AFTER_MS) return last;
    return this.walk();
  }

  private walk(): Promise<Measured> {
    this.walking ??= this.measure().finally(() => (this.walking = undefined));
    return this.walking;
  }

  private async measure(): Promise<Measured> {
    const at = Date.now();
    this.committedDuringWalk = 0;
    const usage: QuotaUsage = { bytes: 0, entries: 0 };
    const pending = [this.workspace];
    while (pending.length && usage.bytes <= this.limitBytes && usage.entries <= MAX_ENTRIES) {
      const dir = pending.pop() as string;
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const entry of entries) {
        usage.entries += 1;
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) pending.push(file);
        else if (!this.staging.has(file)) {
          const info = await lstat(file).catch(() => undefined);
          // Allocated blocks, not the apparent size: a sparse file costs what it occupies.
          if (info) usage.bytes += Math.min(info.size, info.blocks * 512);
        }
      }
    }
    // Writes committed during the walk may or may not have been seen: counting them again only errs towards full.
    const measured: Measured = { usage, at, counted: this.committedDuringWalk };
    this.measured = measured;
    return measured;
  }
}
