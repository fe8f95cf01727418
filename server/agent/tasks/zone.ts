/**
 * The user's time zone, as the account service keeps it (the web client reports the browser's):
 * a task made without a `timezone` is read in it, and the model is told the local time there when
 * it schedules one, so "remind me at 9 tomorrow" means 9 where the user is (docs/agent.md,
 * "Scheduled tasks"). It arrives as USER_TIMEZONE at start and through `tasks.setTimezone` when
 * it changes while the agent runs; it is kept in `agent_state` so that an agent started without
 * it (a standalone one) still has the last zone it was told. Unknown or unset: UTC.
 */
import { AppError } from '../../common/errors.js';
import { readState, writeState } from '../state.js';
import type { AgentSql } from '../store.js';
import { isKnownZone } from './schedule.js';

const ZONE_KEY = 'user_timezone';

export class UserZone {
  private constructor(
    private readonly sql: AgentSql,
    private zone: string | undefined,
  ) {}

  /** USER_TIMEZONE when it names a zone, else the stored one. */
  static open(sql: AgentSql, configured: string | undefined): UserZone {
    if (configured && isKnownZone(configured)) {
      if (readState(sql, ZONE_KEY) !== configured) writeState(sql, ZONE_KEY, configured);
      return new UserZone(sql, configured);
    }
    const stored = readState(sql, ZONE_KEY);
    return new UserZone(sql, stored && isKnownZone(stored) ? stored : undefined);
  }

  /** The user's zone; UTC until one is known. */
  get(): string {
    return this.zone ?? 'UTC';
  }

  /** Whether the zone is the user's own or only the UTC default. */
  get known(): boolean {
    return this.zone !== undefined;
  }

  /** Keeps a new zone; 400 INVALID_SCHEDULE for one the runtime does not know. */
  async set(zone: string): Promise<void> {
    if (!isKnownZone(zone)) throw new AppError(400, 'INVALID_SCHEDULE', `Unknown time zone: ${zone}`);
    this.zone = zone;
    writeState(this.sql, ZONE_KEY, zone);
  }

  /** "Sunday 2026-11-29 10:15 in Europe/Berlin (UTC+01:00)": the local time the model reckons from, with the offset it writes into `at`. */
  localTime(now: Date = new Date()): string {
    const parts = Object.fromEntries(
      new Intl.DateTimeFormat('en-CA', {
        timeZone: this.get(),
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        weekday: 'long',
        hourCycle: 'h23',
        timeZoneName: 'longOffset',
      })
        .formatToParts(now)
        .map((part) => [part.type, part.value]),
    );
    const offset = parts.timeZoneName === 'GMT' ? '+00:00' : (parts.timeZoneName ?? '').replace('GMT', '');
    return `${parts.weekday} ${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute} in ${this.get()} (UTC${offset})`;
  }
}
