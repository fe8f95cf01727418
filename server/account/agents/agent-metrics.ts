/**
 * Local agents' own series in the account service's GET /metrics. Local agents listen only on a
 * private socket nobody else can reach, so at each scrape the account service asks every agent
 * running here (never a sleeping one: it is not woken) for its metrics as JSON, with the agent
 * secret, all in parallel and each within a short timeout, and appends them SUMMED over the
 * agents as `agents_<name>` (agents_chat_runs_total{outcome}, agents_tool_calls_total{tool,result},
 * agents_upload_bytes_total, agents_sse_streams_open), labelled service="agent". A slow, dead or
 * garbled agent is left out of that scrape and counted in agent_metrics_scrape_failures_total.
 *
 * Only the series of @contracts/agent/metrics.ts are read, each with its own label names, and a
 * label value must be a short lowercase word (an outcome, a tool, a result): the agent process
 * runs the model's tools, so its answer is treated as untrusted and can never add a series, a
 * label or a value that carries an id (the agent knows its user's id). Process metrics
 * (process_*, nodejs_*) are not summed: a sum of heaps or event-loop lags over processes means
 * little. A stopped agent's counters leave the sums with it, which Prometheus's rate() and
 * increase() read as a counter reset.
 */
import { AggregatorRegistry, Counter } from 'prom-client';
import { z } from 'zod';
import { AGENT_SERIES, type AgentSeriesName } from '@contracts/agent/metrics.js';
import type { ServiceMetrics } from '../../common/metrics.js';
import type { AgentEndpoint } from './registry.js';
import { agentFetch } from './transport.js';

const PREFIX = 'agents_';
/** The JSON of our four series is a few kB; anything much larger is not an agent of ours talking. */
const MAX_ANSWER_BYTES = 256 * 1024;
const MAX_VALUES_PER_SERIES = 200;
const LABEL_VALUE = /^[a-z][a-z_]{0,63}$/;

const AgentAnswer = z.array(
  z.object({
    name: z.string(),
    type: z.string(),
    // null: a NaN as JSON writes it (an event-loop lag gauge with no sample since the last scrape): dropped below, not the whole answer.
    values: z.array(z.object({ value: z.number().nullable(), labels: z.record(z.string(), z.union([z.string(), z.number()])).default({}) })).default([]),
  }),
);
type AgentAnswer = z.infer<typeof AgentAnswer>;

/** One agent's series as AggregatorRegistry.aggregate takes it (registry.getMetricsAsJSON's shape). */
export interface SummableSeries {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  aggregator: 'sum';
  values: Array<{ value: number; labels: Record<string, string> }>;
}

const isSummed = (name: string): name is AgentSeriesName => Object.hasOwn(AGENT_SERIES, name);

/**
 * The series of one agent's answer that we sum, renamed and relabelled by our rules; values with
 * another label, an unexpected label value or a negative or non-finite number are dropped.
 */
export function summableSeries(answer: unknown): SummableSeries[] {
  const parsed = AgentAnswer.safeParse(answer);
  if (!parsed.success) throw new Error('not a metrics answer');
  return parsed.data.flatMap((series: AgentAnswer[number]) => {
    if (!isSummed(series.name)) return [];
    const spec = AGENT_SERIES[series.name];
    if (series.type !== spec.type || series.values.length > MAX_VALUES_PER_SERIES) return [];
    const allowed: readonly string[] = spec.labels;
    const values = series.values.flatMap(({ value, labels }) => {
      if (value === null || !Number.isFinite(value) || value < 0) return [];
      const kept: Record<string, string> = {};
      for (const [name, label] of Object.entries(labels)) {
        if (name === 'service') continue;
        if (!allowed.includes(name) || typeof label !== 'string' || !LABEL_VALUE.test(label)) return [];
        kept[name] = label;
      }
      return [{ value, labels: { ...kept, service: 'agent' } }];
    });
    return [{ name: `${PREFIX}${series.name}`, help: `${spec.help}, summed over the running local agents`, type: spec.type, aggregator: 'sum', values }];
  });
}

/** Sums the summable series of several agents' answers into Prometheus text ('' when none). */
export async function sumAgentSeries(perAgent: SummableSeries[][]): Promise<string> {
  const summed = AggregatorRegistry.aggregate(perAgent);
  return summed.getMetricsAsArray().length ? summed.metrics() : '';
}

/** The body of `res`, refused past `max` bytes. */
async function cappedJson(res: Response, max: number): Promise<unknown> {
  const declared = Number(res.headers.get('content-length') ?? 0);
  if (declared > max) throw new Error('metrics answer too large');
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body?.getReader();
  for (let read = await reader?.read(); read && !read.done; read = await reader?.read()) {
    size += read.value.byteLength;
    if (size > max) {
      await reader?.cancel();
      throw new Error('metrics answer too large');
    }
    chunks.push(read.value);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

export class LocalAgentsScrape {
  private readonly failures: Counter;

  constructor(
    metrics: ServiceMetrics,
    private readonly running: () => Array<Pick<AgentEndpoint, 'url' | 'secret'>>,
    private readonly timeoutMs = 1_000,
  ) {
    this.failures = new Counter({
      name: 'agent_metrics_scrape_failures_total',
      help: 'Running local agents left out of a /metrics scrape (no answer in time, refused, or not a metrics answer)',
      registers: [metrics.registry],
    });
  }

  private async scrapeOne(agent: Pick<AgentEndpoint, 'url' | 'secret'>): Promise<SummableSeries[] | undefined> {
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      const { base, fetch: fetchImpl } = agentFetch(agent.url);
      const res = await fetchImpl(`${base}/metrics`, { headers: { authorization: `Bearer ${agent.secret}`, accept: 'application/json' }, signal });
      if (!res.ok) throw new Error(`status ${res.status}`);
      return summableSeries(await cappedJson(res, MAX_ANSWER_BYTES));
    } catch {
      this.failures.inc();
      return undefined;
    }
  }

  /** The running agents' series summed, as Prometheus text to append to the account's own. */
  async text(): Promise<string> {
    const answers = await Promise.all(this.running().map((agent) => this.scrapeOne(agent)));
    return sumAgentSeries(answers.filter((answer) => answer !== undefined));
  }
}
