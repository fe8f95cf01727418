/**
 * What the account service needs to decide whether this agent may sleep (`GET /lifecycle`, agent
 * secret): whether anything is going on — chat runs, subagent runs, a heartbeat, requests in
 * flight, a Telegram bot that long-polls or handles a message, a scheduled task's turn — and when
 * the agent next wants to be woken (the earlier of its next heartbeat, while HEARTBEAT.md has
 * something in it, and its next due task; now for a long-polling bot; null otherwise).
 */
import type { RequestHandler } from 'express';
import type { LifecycleReport } from '@contracts/agent/lifecycle.js';
import { hasBody } from '../common/http.js';
import { readHeartbeatFile } from './heartbeat/run.js';
import type { ChatRuntime } from './chat/runtime.js';
import type { TaskRunner } from './tasks/runner.js';
import type { AgentConfig } from './config.js';
import type { HeartbeatScheduler } from './heartbeat/scheduler.js';
import type { MessengerService } from './messenger/service.js';
import type { SubagentRegistry } from './subagents/registry.js';

/** Paths that ask about the agent rather than use it: they never make it busy. */
const PROBES = /^\/(health|healthz|readyz|metrics|lifecycle)$|^\/trpc\/health\./;

/**
 * Counts requests in flight (streams count until they end), each from the moment its body is in:
 * one still arriving does no work yet, and counting it let a client that sends a few bytes and
 * then waits keep the agent "busy", so that it was never stopped to make room for another user
 * (docs/security.md, "Stalled bodies"). Its body has a deadline of its own (REQUEST_BODY_TIMEOUT).
 */
export class RequestActivity {
  private count = 0;

  get inFlight(): number {
    return this.count;
  }

  readonly middleware: RequestHandler = (req, res, next) => {
    if (PROBES.test(req.path)) return next();
    let state: 'receiving' | 'counted' | 'closed' = 'receiving';
    const count = () => {
      if (state !== 'receiving') return;
      state = 'counted';
      this.count++;
    };
    res.once('close', () => {
      if (state === 'counted') this.count--;
      state = 'closed';
    });
    // 'end' comes once the route has read the whole body.
    if (hasBody(req)) req.once('end', count);
    else count();
    next();
  };
}

/** What the report reads, each part by what it is asked (the agent's services object has this shape). */
export interface LifecycleSources {
  config: Pick<AgentConfig, 'workspace'>;
  chat: Pick<ChatRuntime, 'running'>;
  subagents: Pick<SubagentRegistry, 'running'>;
  heartbeat: Pick<HeartbeatScheduler, 'running' | 'nextAt'>;
  requests: Pick<RequestActivity, 'inFlight'>;
  messenger: Pick<MessengerService, 'busy' | 'polling'>;
  tasks: { runner: Pick<TaskRunner, 'running' | 'nextDueAt'> };
}

export async function lifecycleReport(services: LifecycleSources): Promise<LifecycleReport> {
  const activity = {
    chat_runs: services.chat.running(),
    subagent_runs: services.subagents.running(),
    heartbeat: services.heartbeat.running,
    requests: services.requests.inFlight,
    messenger: services.messenger.busy(),
    task_runs: services.tasks.runner.running,
  };
  const busy =
    activity.chat_runs > 0 || activity.subagent_runs > 0 || activity.heartbeat || activity.requests > 0 || activity.messenger || activity.task_runs > 0;
  // A long-polling bot wants to run all the time: should the agent be stopped anyway (the
  // service restarts), it is due again at once.
  if (services.messenger.polling()) return { busy, activity, next_wake_at: new Date().toISOString() };
  const heartbeat = services.heartbeat.nextAt;
  const wantsHeartbeat = heartbeat !== undefined && Boolean(await readHeartbeatFile(services.config.workspace));
  const wakes = [wantsHeartbeat ? heartbeat : undefined, await services.tasks.runner.nextDueAt()].filter((at): at is Date => at !== undefined);
  const first = wakes.sort((a, b) => a.getTime() - b.getTime())[0];
  return { busy, activity, next_wake_at: first ? first.toISOString() : null };
}
