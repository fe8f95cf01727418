/**
 * Local agents in /metrics: `agents_running` (processes now) and `agents_evicted_total` (idle
 * agents stopped to make room under AGENT_MAX_RUNNING). Both are read from the provisioner when
 * scraped, so the provisioner needs no metrics of its own.
 */
import { Counter, Gauge } from 'prom-client';
import type { ServiceMetrics } from '../../common/metrics.js';
import type { AgentProvisioner } from './provisioner.js';

export function agentMetrics(metrics: ServiceMetrics, provisioner: AgentProvisioner): void {
  new Gauge({
    name: 'agents_running',
    help: 'Local agent processes running',
    registers: [metrics.registry],
    collect() {
      this.set(provisioner.stats?.().running ?? 0);
    },
  });
  new Counter({
    name: 'agents_evicted_total',
    help: 'Idle agents stopped to make room under AGENT_MAX_RUNNING',
    registers: [metrics.registry],
    collect() {
      // A counter mirrored from the provisioner's own count, which only grows.
      this.reset();
      this.inc(provisioner.stats?.().evicted ?? 0);
    },
  });
}
