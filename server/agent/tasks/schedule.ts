/**
 * When a task runs: a one-shot `at`, or the next time five cron fields match in an IANA zone.
 * Daylight-saving changes are croner's (a 02:30 that does not exist on the spring-forward day
 * runs at 03:00; a 02:30 that happens twice in autumn runs once). croner is loaded on the first
 * schedule computed, not at start: an agent that only wakes to run a due task reads the time it
 * stored and needs no cron parser until it works out the following one.
 *
 * A recurring task may not run closer together than the minimum interval (TASK_MIN_INTERVAL:
 * guests an hour, full accounts five minutes): checked over the runs of the next eight days, so
 * that `0,1 9 * * *` (two runs a minute apart once a day) is refused as surely as `* * * * *`.
 */
import { AppError } from '../../common/errors.js';

/** How far ahead the minimum interval is checked: a week and a day covers every weekday pattern. */
const CHECK_WINDOW_MS = 8 * 24 * 3600 * 1000;

function invalid(detail: string): AppError {
  return new AppError(400, 'INVALID_SCHEDULE', detail);
}

/** True when the runtime knows the IANA zone (`Europe/Berlin`, `UTC`). */
export function isKnownZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

type CronJob = { nextRun(from?: Date): Date | null };
let croner: Promise<typeof import('croner')> | undefined;

async function cronJob(cron: string, timezone: string): Promise<CronJob> {
  if (cron.trim().split(/\s+/).length !== 5) throw invalid('cron must have five fields: minute hour day-of-month month day-of-week');
  if (!isKnownZone(timezone)) throw invalid(`Unknown time zone: ${timezone}`);
  croner ??= import('croner');
  const { Cron } = await croner;
  try {
    // paused: a pattern object only, never a timer of croner's own (the agent's scheduler runs tasks).
    return new Cron(cron.trim(), { timezone, paused: true });
  } catch (error) {
    throw invalid(`cron is not valid: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The first run of `cron` in `timezone` strictly after `after`; null when it never fires again. */
export async function nextCronRun(cron: string, timezone: string, after: Date): Promise<Date | null> {
  return (await cronJob(cron, timezone)).nextRun(after);
}

/**
 * Checks a recurring schedule and answers its first run after `now`: 400 INVALID_SCHEDULE when it
 * does not parse, never fires, or fires twice within `minIntervalMs`.
 */
export async function checkCron(cron: string, timezone: string, now: Date, minIntervalMs: number): Promise<Date> {
  const job = await cronJob(cron, timezone);
  const first = job.nextRun(now);
  if (!first) throw invalid('cron never fires');
  const end = now.getTime() + CHECK_WINDOW_MS;
  let previous = first;
  // Bounded: each step moves at least minIntervalMs ahead, or the check fails.
  for (;;) {
    const next = job.nextRun(previous);
    if (!next || next.getTime() > end) break;
    if (next.getTime() - previous.getTime() < minIntervalMs) {
      throw invalid(`A recurring task may run at most once every ${describeInterval(minIntervalMs)}`);
    }
    previous = next;
  }
  return first;
}

/** A one-shot time: 400 INVALID_SCHEDULE unless it lies ahead of `now`. */
export function checkAt(at: string, now: Date): Date {
  const when = new Date(at);
  if (Number.isNaN(when.getTime())) throw invalid('at is not an ISO 8601 time');
  if (when.getTime() <= now.getTime()) throw invalid('at lies in the past');
  return when;
}

function describeInterval(ms: number): string {
  const minutes = ms / 60_000;
  if (minutes >= 60 && minutes % 60 === 0) return minutes === 60 ? 'hour' : `${minutes / 60} hours`;
  if (minutes >= 1 && Number.isInteger(minutes)) return minutes === 1 ? 'minute' : `${minutes} minutes`;
  return `${ms / 1000} seconds`;
}
