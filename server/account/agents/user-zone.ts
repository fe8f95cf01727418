/**
 * The user's time zone on their agent (docs/agent.md, "Scheduled tasks"): kept on the account
 * (`PUT /account/timezone`, the browser's zone), handed to the agent as USER_TIMEZONE when it
 * starts, and told to a running one when it changes (`tasks.setTimezone`), so that a task the
 * model schedules from "at 9 tomorrow" is read in the user's zone. A sleeping agent is not woken
 * for it: it reads the new zone at its next start.
 */
import type { Logger } from '../../common/log.js';
import { agentClient } from './client.js';
import { isSleepingAgents, type AgentProvisioner } from './provisioners/provisioner.js';
import type { AgentEndpoint } from './registry.js';

/** Tells one running agent the zone; a failure is logged (the agent gets the zone at its next start). */
export async function tellZone(agent: Pick<AgentEndpoint, 'url' | 'secret'>, zone: string, log: Pick<Logger, 'warn'>): Promise<void> {
  try {
    await agentClient(agent).tasks.setTimezone.mutate({ timezone: zone });
  } catch (error) {
    log.warn({ reason: error instanceof Error ? error.message : String(error) }, "telling the agent the user's time zone failed");
  }
}

/** After the zone changed on the account: tells the user's agent if it runs (agents elsewhere always run). */
export async function zoneChanged(provisioner: AgentProvisioner, userId: string, zone: string, log: Pick<Logger, 'warn'>): Promise<void> {
  const agent = isSleepingAgents(provisioner) ? await provisioner.awakeAgentOf(userId) : await provisioner.agentFor(userId).catch(() => undefined);
  if (agent) await tellZone(agent, zone, log);
}
