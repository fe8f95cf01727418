/**
 * Operators' view of the agents (docs/admin.md, "Agents"): the ones running on this instance with
 * their memory and runs in flight, stop and restart, and usage per user per day (tokens, messages, uploads).
 */
import { readFile } from 'node:fs/promises';
import { notFound } from '../../common/errors.js';
import { agentClient } from '../agents/client.js';
import type { AccountServices } from '../services.js';
import { utc } from '../users/account.js';
import type { AdminCaller } from './access.js';
import { recordAudit } from '../events/audit.js';
import { refuseBanned } from '../users/bans.js';
import { refuseKeyOnAdmin } from '../users/roles.js';

type Services = Pick<AccountServices, 'store' | 'agents'>;

/** Resident memory of a process (Linux), or null. */
async function residentBytes(pid: number | undefined): Promise<number | null> {
  if (!pid) return null;
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) * 1024 : null;
  } catch {
    return null;
  }
}

/** What the agent says is in flight (chat and subagent runs), or null when it does not answer within 2 s. */
async function runsInFlight(url: string, secret: string): Promise<number | null> {
  try {
    const report = await agentClient({ url, secret }).health.lifecycle.query(undefined, { signal: AbortSignal.timeout(2_000) });
    return report.activity.chat_runs + report.activity.subagent_runs;
  } catch {
    return null;
  }
}

export async function listRunningAgents(services: Services) {
  const running = services.agents.provisioner.listRunning?.() ?? [];
  return Promise.all(
    running.map(async (agent) => ({
      user_id: agent.userId,
      name: agent.name,
      since: utc(agent.startedAt),
      memory_bytes: await residentBytes(agent.pid),
      last_activity_at: utc(agent.lastUsedAt),
      runs_in_flight: await runsInFlight(agent.url, agent.secret),
    })),
  );
}

/** Stops the user's agent (`restart`: and starts it again at once). */
export async function stopAgent(services: Services, caller: AdminCaller, userId: string, restart: boolean): Promise<void> {
  const { provisioner } = services.agents;
  await refuseKeyOnAdmin(services.store.db, caller.actor, userId);
  const agent = await services.store.db.agent.findUnique({ where: { userId }, select: { id: true, name: true } });
  if (!agent || !provisioner.stopAgentOf) throw notFound('This user has no agent this service runs', 'AGENT_NOT_FOUND');
  // A banned user's agent stays stopped (docs/security.md, "Bans hold"): a restart is refused before it stops anything.
  if (restart) await refuseBanned(services.store.db, userId);
  const wasRunning = await provisioner.stopAgentOf(userId);
  if (restart) await provisioner.agentFor(userId);
  await recordAudit(services.store.db, {
    actor: caller.actor,
    action: restart ? 'agent.restart' : 'agent.stop',
    target: { type: 'user', id: userId },
    ip: caller.ip,
    before: { agent: agent.name, running: wasRunning },
    after: { running: restart },
  });
}

/** Model tokens, chat messages and uploads per user per day, newest first. */
export async function usagePerDay(services: Services, userId: string | undefined, days: number, now = new Date()) {
  const since = new Date(now.getTime() - (days - 1) * 24 * 60 * 60 * 1000).toISOString().slice(0, 10);
  const rows = await services.store.db.modelUsage.findMany({
    where: { day: { gte: since }, ...(userId ? { scope: userId } : { scope: { not: 'guests' } }) },
    orderBy: [{ day: 'desc' }, { scope: 'asc' }],
    take: 5000,
  });
  return rows.map((row) => ({ user_id: row.scope, day: row.day, ...usageFigures((key) => Number(row[key])) }));
}

/** The columns of a `model_usage` row that usage figures are made of. */
export type UsageColumn = 'tokensIn' | 'tokensOut' | 'messages' | 'uploads' | 'tokensChat' | 'tokensHeartbeat' | 'tokensTask' | 'tokensSubagent';

/** Usage figures as the admin API shows them, from a column reader (one row, or a sum over rows). */
export function usageFigures(value: (column: UsageColumn) => number) {
  return {
    tokens_in: value('tokensIn'),
    tokens_out: value('tokensOut'),
    messages: value('messages'),
    uploads: value('uploads'),
    by_source: { chat: value('tokensChat'), heartbeat: value('tokensHeartbeat'), task: value('tokensTask'), subagent: value('tokensSubagent') },
  };
}
