/**
 * Whether a proactive turn (a heartbeat, a scheduled task) may start now, asked of the egress
 * gateway before the turn, which then does not start at all when the user's daily model budget
 * has no room for it (docs/agent.md, "Proactive turns and the budget"). The first refusal of a
 * budget day is told to the user once, as a pending message; later ones only skip (and log).
 *
 * An agent without a gateway (standalone, on its own VM) has no budget here: everything may run.
 * A gateway that does not answer does not stop a turn either: it still meters each call, and
 * refuses a proactive one that would not fit under the ceiling whole.
 */
import type { Logger } from '../../common/log.js';
import { GATEWAY_BUDGET_PATH, GATEWAY_SELF_HOST, ProactiveBudget, type ModelSource } from '@contracts/agent/model-source.js';
import { gatewayFetch, type EgressGatewayAddress } from '../net/egress.js';
import type { AgentDb } from '../store.js';

/** agent_state key: the reset time of the budget day whose refusal was last told to the user. */
const NOTICE_KEY = 'budget_notice_resets_at';

export type ProactiveAdmission = { allowed: true } | { allowed: false; resetsAt: string; tellUser: boolean };

export class ProactiveBudgetGate {
  private readonly fetch: typeof fetch | undefined;

  constructor(
    private readonly db: AgentDb,
    egress: EgressGatewayAddress | undefined,
    private readonly log: Logger,
  ) {
    this.fetch = egress ? gatewayFetch(egress) : undefined;
  }

  async admit(source: ModelSource): Promise<ProactiveAdmission> {
    if (!this.fetch) return { allowed: true };
    let answer: ProactiveBudget;
    try {
      const res = await this.fetch(`http://${GATEWAY_SELF_HOST}${GATEWAY_BUDGET_PATH}?source=${source}`, { signal: AbortSignal.timeout(5_000) });
      answer = ProactiveBudget.parse(await res.json());
    } catch (error) {
      this.log.warn({ reason: error instanceof Error ? error.message : String(error), source }, 'budget check failed; the gateway still meters each call');
      return { allowed: true };
    }
    if (answer.allowed) return { allowed: true };
    this.log.info({ source, used: answer.used, limit: answer.limit }, 'proactive turn not started: the model budget is spent');
    return { allowed: false, resetsAt: answer.resets_at, tellUser: await this.claimNotice(answer.resets_at) };
  }

  /** True for the first refusal of a budget day (a conditional write: exactly one caller wins). */
  private async claimNotice(resetsAt: string): Promise<boolean> {
    const { count } = await this.db.agentState.updateMany({ where: { key: NOTICE_KEY, NOT: { value: resetsAt } }, data: { value: resetsAt } });
    if (count === 1) return true;
    try {
      await this.db.agentState.create({ data: { key: NOTICE_KEY, value: resetsAt } });
      return true;
    } catch {
      return false; // the row exists with this day's value: told already
    }
  }
}

/** The pending message that tells the user, once a budget day, that proactive turns wait. */
export function budgetNotice(what: string, resetsAt: string): string {
  return `${what} did not run: today's model budget is used up. Scheduled tasks and heartbeats are skipped until it resets at ${resetsAt}.`;
}
