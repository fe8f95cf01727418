/**
 * Each user's web fetches and searches: every one is a row of their activity log (`web_fetch`,
 * `web_search`: the URL or the query), and the rows of the current UTC day are what the daily
 * counts (AGENT_WEB_DAILY_FETCHES, AGENT_WEB_DAILY_SEARCHES and their guest twins) are held to.
 * The row is written first and the day counted after, with the row included: calls racing each
 * other may all be refused at the edge, but never more admitted than the count allows.
 */
import type { WebToolName } from '@contracts/agent/web.js';
import { AppError } from '../../../common/errors.js';
import { activityRow, NO_CLIENT, type ActivityType } from '../../events/activity.js';
import type { AccountDb } from '../../store.js';
import type { WebLedger } from './web.js';

/** Calls per UTC day by tool; 0: no ceiling. */
export interface WebDailyCounts {
  fetch: number;
  search: number;
}

const ACTIVITY: Record<WebToolName, ActivityType> = { fetch: 'web_fetch', search: 'web_search' };

export function webLedger(db: AccountDb, counts: { account: WebDailyCounts; guest: WebDailyCounts }, isGuest: (userId: string) => Promise<boolean>): WebLedger {
  return {
    async admit(userId, tool, detail) {
      const now = new Date();
      const row = activityRow(userId, { type: ACTIVITY[tool], detail }, NO_CLIENT, now);
      await db.activityEvent.create({ data: row });
      const limit = counts[(await isGuest(userId)) ? 'guest' : 'account'][tool];
      if (limit === 0) return;
      const dayStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
      const today = await db.activityEvent.count({ where: { userId, type: ACTIVITY[tool], at: { gte: dayStart } } });
      if (today <= limit) return;
      // Not done, so not in the log: the refusal is the answer the agent gets.
      await db.activityEvent.delete({ where: { id: row.id } });
      const resets = new Date(dayStart.getTime() + 86_400_000);
      throw new AppError(
        429,
        'WEB_DAILY_LIMIT',
        `${limit} web ${tool === 'fetch' ? 'fetches' : 'searches'} a day are spent; more after ${resets.toISOString()}`,
        { 'retry-after': String(Math.ceil((resets.getTime() - now.getTime()) / 1000)) },
      );
    },
  };
}
