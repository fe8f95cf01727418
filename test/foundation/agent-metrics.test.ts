/**
 * The account service's sums of its local agents' series (server/account/agents/agent-metrics.ts)
 * against agents that misbehave: a hostile answer adds no series, label or id; a silent, garbled
 * or oversized one is left out within the timeout and counted.
 */
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalAgentsScrape, summableSeries, sumAgentSeries } from '../../server/account/agents/agent-metrics.js';
import { unixAgentUrl } from '../../server/account/agents/transport.js';
import { createMetrics } from '../../server/common/metrics.js';
import { tempDir } from '../support/servers.js';

const USER_ID = '3f0c2a9e-7d41-4b7e-9a55-0c6f1e2d8b11';

const answerOf = (chatRuns: Array<{ value: number; labels: Record<string, string | number> }>) => [
  { name: 'chat_runs_total', help: 'x', type: 'counter', aggregator: 'sum', values: chatRuns },
  { name: 'upload_bytes_total', help: 'x', type: 'counter', aggregator: 'sum', values: [{ value: 10, labels: { service: 'agent' } }] },
];

describe('summing agents’ answers', () => {
  it('sums the known series of several agents by label, under agents_', async () => {
    const text = await sumAgentSeries([
      summableSeries(answerOf([{ value: 2, labels: { outcome: 'completed', service: 'agent' } }])),
      summableSeries(
        answerOf([
          { value: 3, labels: { outcome: 'completed' } },
          { value: 1, labels: { outcome: 'error' } },
        ]),
      ),
    ]);
    expect(text).toContain('agents_chat_runs_total{outcome="completed",service="agent"} 5');
    expect(text).toContain('agents_chat_runs_total{outcome="error",service="agent"} 1');
    expect(text).toContain('agents_upload_bytes_total{service="agent"} 20');
  });

  it('keeps an agent whose answer has a NaN (null in JSON) in a series it does not sum, and drops a null it would', async () => {
    // An idle agent's event-loop lag gauges have no sample between two close scrapes: NaN.
    const answer = JSON.parse(
      JSON.stringify([
        ...answerOf([
          { value: 4, labels: { outcome: 'completed' } },
          { value: Number.NaN, labels: { outcome: 'error' } },
        ]),
        { name: 'nodejs_eventloop_lag_mean_seconds', help: 'x', type: 'gauge', aggregator: 'average', values: [{ value: Number.NaN, labels: {} }] },
      ]),
    ) as unknown;
    const text = await sumAgentSeries([summableSeries(answer)]);
    expect(text).toContain('agents_chat_runs_total{outcome="completed",service="agent"} 4');
    expect(text).not.toContain('outcome="error"');
    expect(text).toContain('agents_upload_bytes_total{service="agent"} 10');
  });

  it('never takes a series, label or value a hostile agent adds', async () => {
    const hostile = [
      ...answerOf([
        { value: 1, labels: { outcome: USER_ID } },
        { value: 1, labels: { outcome: 'completed', user: 'someone' } },
        { value: 1, labels: { outcome: 'completed', service: `agent-${USER_ID}` } },
        { value: -5, labels: { outcome: 'stopped' } },
        { value: 4, labels: { outcome: 'completed' } },
      ]),
      { name: 'running', help: 'collides with agents_running', type: 'gauge', values: [{ value: 9, labels: {} }] },
      { name: 'process_resident_memory_bytes', help: 'x', type: 'gauge', values: [{ value: 9, labels: {} }] },
      { name: 'sse_streams_open', help: 'wrong type', type: 'counter', values: [{ value: 9, labels: {} }] },
      {
        name: 'tool_calls_total',
        help: 'too many',
        type: 'counter',
        values: Array.from({ length: 500 }, () => ({ value: 1, labels: { tool: 'exec', result: 'ok' } })),
      },
    ];
    const text = await sumAgentSeries([summableSeries(hostile)]);
    expect(text).not.toContain(USER_ID);
    expect(text).not.toContain('someone');
    expect(text).not.toMatch(/agents_running|process_|sse_streams|tool_calls|stopped/);
    // The one series that follows the rules counts: service is always ours.
    expect(text).toContain('agents_chat_runs_total{outcome="completed",service="agent"} 5');
    expect(() => summableSeries({ not: 'an array' })).toThrow();
  });
});

describe('scraping agents that misbehave', () => {
  let dir: string;
  const servers: Server[] = [];
  /** A server on a socket of its own that answers `/metrics` as `handler` says. */
  async function fakeAgent(name: string, handler: Parameters<typeof createServer>[1]): Promise<string> {
    const socketPath = path.join(dir, `${name}.sock`);
    const server = createServer(handler);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    return unixAgentUrl(socketPath);
  }
  beforeAll(async () => {
    dir = await tempDir('agent-metrics');
  });
  afterAll(async () => {
    for (const server of servers) server.closeAllConnections();
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  });

  it('leaves out a silent, refusing, garbled or oversized agent within the timeout and counts each', async () => {
    const good = await fakeAgent('good', (_req, res) => res.end(JSON.stringify(answerOf([{ value: 7, labels: { outcome: 'completed' } }]))));
    const silent = await fakeAgent('silent', () => undefined);
    const refusing = await fakeAgent('refusing', (_req, res) => res.writeHead(401).end());
    const garbled = await fakeAgent('garbled', (_req, res) => res.end('<html>'));
    const huge = await fakeAgent('huge', (_req, res) => {
      res.write('[');
      const chunk = ' '.repeat(64 * 1024);
      for (let i = 0; i < 64; i++) res.write(chunk);
      res.end(']');
    });
    const metrics = createMetrics('account');
    const targets = [good, silent, refusing, garbled, huge].map((url) => ({ url, secret: 's' }));
    const scrape = new LocalAgentsScrape(metrics, () => targets, 300);
    const started = Date.now();
    const text = await scrape.text();
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(text).toContain('agents_chat_runs_total{outcome="completed",service="agent"} 7');
    expect(await metrics.registry.getSingleMetricAsString('agent_metrics_scrape_failures_total')).toMatch(
      /agent_metrics_scrape_failures_total\{service="account"\} 4$/m,
    );
  });
});
