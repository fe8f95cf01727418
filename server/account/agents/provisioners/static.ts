import type { Logger } from '../../../common/log.js';
import type { AgentEndpoint, AgentRegistry } from '../registry.js';
import { agentUnavailable, type AgentProvisioner } from './provisioner.js';

export class StaticProvisioner implements AgentProvisioner {
  constructor(
    private readonly registry: AgentRegistry,
    private readonly log?: Logger,
  ) {}

  /** The registry keeps the agent for reuse; its workspace lives on its own VM, so the operator is told to wipe it. */
  async deleteAgentOf(userId: string): Promise<void> {
    const agent = await this.registry.forUser(userId);
    if (!agent) return;
    await this.registry.assign(agent.name, null);
    this.log?.warn({ agent: agent.name }, 'account deleted: agent unassigned; wipe its workspace before assigning it again');
  }

  async agentFor(userId: string): Promise<AgentEndpoint> {
    const agent = await this.registry.forUser(userId);
    if (!agent) throw agentUnavailable('No agent is assigned to this account yet');
    return agent;
  }

  async close(): Promise<void> {}
}
