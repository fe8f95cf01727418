/**
 * Agents in /metrics. Local agents: `agents_running`, `agents_starting` (launched, /health not yet
 * answering), `agents_crashed_total` (exits we did not ask for), `agents_evicted_total` (idle
 * agents stopped to make room under AGENT_MAX_RUNNING), `agents_pooled` (warm-pool agents waiting for
 * a new user), `agent_pool_claims_total` (new users served by one), all read from the provisioner when
 * scraped, and `agent_cold_start_seconds` (spawn to the first healthy answer). Every provisioner:
 * `agent_proxy_seconds`, how long the agent takes to answer what the proxy forwards (REST: to
 * its answer's headers, a stream's first byte; tRPC queries and mutations: to their result).
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import type { ServiceMetrics } from '../../common/metrics.js';
import type { AgentProvisioner } from './provisioners/provisioner.js';

export class AgentMetrics {
  private readonly coldStarts: Histogram;
  private readonly proxy: Histogram<'via'>;

  constructor(private readonly metrics: ServiceMetrics) {
    this.coldStarts = new Histogram({
      name: 'agent_cold_start_seconds',
      help: "Local agents' starts, from spawn to the first healthy answer",
      buckets: [0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30],
      registers: [metrics.registry],
    });
    this.proxy = new Histogram({
      name: 'agent_proxy_seconds',
      help: "The agent's answers to proxied calls, by transport (REST: to the answer's headers; tRPC: to the result)",
      labelNames: ['via'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [metrics.registry],
    });
  }

  /** The gauges and counters the provisioner keeps itself, read at each scrape. */
  watch(provisioner: AgentProvisioner): void {
    const { registry } = this.metrics;
    const stats = () => provisioner.stats?.() ?? { running: 0, starting: 0, evicted: 0, crashed: 0, pooled: 0, poolClaims: 0 };
    new Gauge({
      name: 'agents_running',
      help: 'Local agent processes running (starting ones included)',
      registers: [registry],
      collect() {
        this.set(stats().running);
      },
    });
    new Gauge({
      name: 'agents_starting',
      help: 'Local agents launched whose /health does not answer yet',
      registers: [registry],
      collect() {
        this.set(stats().starting);
      },
    });
    new Gauge({
      name: 'agents_pooled',
      help: 'Warm-pool agents started and waiting for a new user (counted in agents_running)',
      registers: [registry],
      collect() {
        this.set(stats().pooled);
      },
    });
    // Counters mirrored from the provisioner's own counts, which only grow.
    new Counter({
      name: 'agent_pool_claims_total',
      help: 'New users whose first call was served by a warm-pool agent (no cold start)',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(stats().poolClaims);
      },
    });
    new Counter({
      name: 'agents_evicted_total',
      help: 'Idle agents stopped to make room under AGENT_MAX_RUNNING',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(stats().evicted);
      },
    });
    new Counter({
      name: 'agents_crashed_total',
      help: 'Local agents that exited without being asked to (restarted with backoff)',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(stats().crashed);
      },
    });
  }

  coldStart(seconds: number): void {
    this.coldStarts.observe(seconds);
  }

  proxied(via: 'rest' | 'trpc', seconds: number): void {
    this.proxy.observe({ via }, seconds);
  }

  /** A relayed event stream opened; the returned function closes it (once). */
  streamOpened(): () => void {
    this.metrics.sseStreams.inc();
    let open = true;
    return () => {
      if (open) this.metrics.sseStreams.dec();
      open = false;
    };
  }
}
