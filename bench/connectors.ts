/**
 * What the egress gateway adds to a connector tool call (issue 44: at most 10 ms p50 over calling
 * the server directly). Every side calls `echo` on the reference MCP server
 * (`@modelcontextprotocol/server-everything`, streamable HTTP on loopback), one call at a time:
 *
 *   direct   the connector client (server/account/connectors/mcp.ts) on a kept connection
 *   service  the account service's connector call as the gateway makes it (store lookup of the
 *            user's connector, the pooled connection with its token, the result converted and
 *            size-checked), without the agent's hop to the gateway
 *   gateway  what an agent does: `POST /connectors/call` over its gateway socket
 *            (server/agent/tools/connectors.ts's path), which the gateway answers with that call
 *
 * gateway − direct is the added latency the goal is about; service − direct is the connectors
 * area's share of it, gateway − service the hop. The account service is a real one (PGlite store)
 * in this process, and so is the agent's side of the hop (in production the agent is a process of
 * its own): the gateway side pays both ends of the hop on this one event loop. ROUNDS rounds of
 * CALLS calls per side, the order reversed each round; each round's p50 and p99 per side, beside
 * the 1-minute load average around it (the machine is shared). The added latency is the median
 * over rounds of (gateway p50 − direct p50) within a round; missing the goal exits 1.
 *
 *   npx tsx bench/connectors.ts     (BENCH_CONNECTORS_CALLS, BENCH_CONNECTORS_ROUNDS)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { GATEWAY_CONNECTOR_CALL_PATH } from '@contracts/agent/connectors.js';
import { GATEWAY_SELF_HOST } from '@contracts/agent/model-source.js';
import { EgressGateway } from '../server/account/agents/egress/gateway.js';
import { connectMcp } from '../server/account/connectors/mcp.js';
import { createLogger } from '../server/common/log.js';
import { gatewayFetch } from '../server/agent/net/egress.js';
import { accountApi, bearer, uniqueEmail } from '../test/support/account-api.js';
import { startEverythingServer } from '../test/support/mcp-everything.js';
import { startTestAccount } from '../test/support/servers.js';
import { loadAverage, median, runIfEntry, table } from './lib/harness.js';

const CALLS = Number(process.env.BENCH_CONNECTORS_CALLS ?? 300);
const ROUNDS = Number(process.env.BENCH_CONNECTORS_ROUNDS ?? 7);

const SIDES = ['direct', 'service', 'gateway'] as const;
type Side = (typeof SIDES)[number];
const GOAL_MS = 10;

interface Round {
  p50_ms: Record<Side, number>;
  p99_ms: Record<Side, number>;
  added_p50_ms: number;
  /** The 1-minute load average before and after the round. */
  load_average: [number, number];
}

export interface ConnectorsResults {
  date: string;
  node: string;
  cores: number;
  calls: number;
  rounds: Round[];
  /** Medians over rounds of the round's gateway − direct and service − direct. */
  added_p50_ms: number;
  added_p99_ms: number;
  service_p50_ms: number;
  goal_ms: number;
  met: boolean;
}

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))] as number;
const round2 = (x: number) => Math.round(x * 100) / 100;

async function timed(calls: number, call: () => Promise<void>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const started = performance.now();
    await call();
    times.push(performance.now() - started);
  }
  return times;
}

export async function benchConnectors(): Promise<ConnectorsResults> {
  const server = await startEverythingServer();
  const account = await startTestAccount('pglite', { CONNECTORS_ALLOW_PRIVATE: '1' });
  const dir = await mkdtemp(path.join(tmpdir(), 'bench-connectors-'));
  try {
    const api = accountApi(account);
    const pair = await api.email(uniqueEmail('bench'));
    const { user_id: userId } = await api.me(pair);
    await api.json(await api.post('/connectors', { name: 'everything', url: server.url }, bearer(pair)), 201);
    const { connectors } = account.services;
    const gateway = new EgressGateway([], createLogger('bench', 'silent'), {
      limits: account.services.config.egressLimits,
      connectors: { tools: (user) => connectors.agentTools(user), call: (user, call, signal) => connectors.call(user, call.name, call.arguments, signal) },
    });
    const socket = path.join(dir, 'egress.sock');
    const open = await gateway.open({ agent: socket }, { agentId: 'bench', userId });
    const viaGateway = gatewayFetch({ socketPath: socket });
    const direct = await connectMcp(new URL(server.url), { timeoutMs: 10_000 });
    const body = JSON.stringify({ name: 'everything__echo', arguments: { message: 'bench' } });
    const sides: Record<Side, () => Promise<void>> = {
      direct: async () => {
        const result = await direct.client.callTool({ name: 'echo', arguments: { message: 'bench' } });
        if (result.isError) throw new Error('direct call failed');
      },
      service: async () => {
        const result = await connectors.call(userId, 'everything__echo', { message: 'bench' }, new AbortController().signal);
        if (result.is_error) throw new Error('service call failed');
      },
      gateway: async () => {
        const res = await viaGateway(`http://${GATEWAY_SELF_HOST}${GATEWAY_CONNECTOR_CALL_PATH}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        const result = (await res.json()) as { is_error: boolean };
        if (result.is_error) throw new Error('gateway call failed');
      },
    };
    // Warm every path (connections, JIT).
    for (const side of SIDES) await timed(50, sides[side]);
    const rounds: Round[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const before = loadAverage()[0] ?? 0;
      const times = {} as Record<Side, number[]>;
      for (const side of round % 2 === 0 ? SIDES : [...SIDES].reverse()) times[side] = await timed(CALLS, sides[side]);
      const of = (q: number) => Object.fromEntries(SIDES.map((side) => [side, round2(quantile(times[side], q))])) as Record<Side, number>;
      const p50 = of(0.5);
      rounds.push({ p50_ms: p50, p99_ms: of(0.99), added_p50_ms: round2(p50.gateway - p50.direct), load_average: [before, loadAverage()[0] ?? 0] });
    }
    await direct.close();
    await open.close();
    const added = round2(median(rounds.map((r) => r.added_p50_ms)));
    return {
      date: new Date().toISOString(),
      node: process.version,
      cores: cpus().length,
      calls: CALLS,
      rounds,
      added_p50_ms: added,
      added_p99_ms: round2(median(rounds.map((r) => r.p99_ms.gateway - r.p99_ms.direct))),
      service_p50_ms: round2(median(rounds.map((r) => r.p50_ms.service - r.p50_ms.direct))),
      goal_ms: GOAL_MS,
      met: added <= GOAL_MS,
    };
  } finally {
    await account.stop();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await runIfEntry(import.meta.url, 'connectors.json', benchConnectors, (results) => {
  console.log(
    table(
      ['round', 'direct p50 / p99 ms', 'service p50 / p99 ms', 'gateway p50 / p99 ms', 'added p50 ms', 'load average'],
      results.rounds.map((r, i) => [
        i + 1,
        ...SIDES.map((side) => `${r.p50_ms[side]} / ${r.p99_ms[side]}`),
        r.added_p50_ms,
        `${r.load_average[0]} → ${r.load_average[1]}`,
      ]),
    ),
  );
  console.log(
    `\nadded by the gateway (median over rounds of gateway − direct): p50 ${results.added_p50_ms} ms (of which the account service's call ${results.service_p50_ms} ms), p99 ${results.added_p99_ms} ms`,
  );
  console.log(`goal: added p50 ≤ ${results.goal_ms} ms: ${results.met ? 'PASS' : 'FAIL'}`);
  if (!results.met) process.exitCode = 1;
});
