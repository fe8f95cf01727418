/**
 * What the egress gateway adds to a connector tool call (issue 44: at most 10 ms p50 over calling
 * the server directly). Both sides call `echo` on the reference MCP server
 * (`@modelcontextprotocol/server-everything`, streamable HTTP on loopback), one call at a time:
 *
 *   direct   the connector client (server/account/connectors/mcp.ts) on a kept connection
 *   gateway  what an agent does: `POST /connectors/call` over its gateway socket
 *            (server/agent/tools/connectors.ts's path), which the gateway answers through the
 *            account service's connectors (store lookup of the user's connector, the pooled
 *            connection with its token, the result converted and size-checked)
 *
 * The account service is a real one (PGlite store) in this process; the gateway serves one agent
 * socket for a signed-in full account with the connector added. ROUNDS rounds of CALLS calls per
 * side, the order alternating; the added latency is the median over rounds of (gateway p50 −
 * direct p50) within a round.
 *
 *   npx tsx bench/connectors.ts     (BENCH_CONNECTORS_CALLS, BENCH_CONNECTORS_ROUNDS)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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
import { median, runIfEntry, table } from './lib/harness.js';

const CALLS = Number(process.env.BENCH_CONNECTORS_CALLS ?? 300);
const ROUNDS = Number(process.env.BENCH_CONNECTORS_ROUNDS ?? 5);

interface Results {
  calls: number;
  rounds: Array<{ direct_p50_ms: number; gateway_p50_ms: number; direct_p99_ms: number; gateway_p99_ms: number }>;
  added_p50_ms: number;
  goal_ms: number;
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

export async function benchConnectors(): Promise<Results> {
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
    const sides = {
      direct: async () => {
        const result = await direct.client.callTool({ name: 'echo', arguments: { message: 'bench' } });
        if (result.isError) throw new Error('direct call failed');
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
    // Warm both paths (connections, JIT).
    await timed(50, sides.direct);
    await timed(50, sides.gateway);
    const rounds: Results['rounds'] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['direct', 'gateway'] as const) : (['gateway', 'direct'] as const);
      const times: Record<string, number[]> = {};
      for (const side of order) times[side] = await timed(CALLS, sides[side]);
      rounds.push({
        direct_p50_ms: round2(quantile(times.direct ?? [], 0.5)),
        gateway_p50_ms: round2(quantile(times.gateway ?? [], 0.5)),
        direct_p99_ms: round2(quantile(times.direct ?? [], 0.99)),
        gateway_p99_ms: round2(quantile(times.gateway ?? [], 0.99)),
      });
    }
    await direct.close();
    await open.close();
    return { calls: CALLS, rounds, added_p50_ms: round2(median(rounds.map((r) => r.gateway_p50_ms - r.direct_p50_ms))), goal_ms: 10 };
  } finally {
    await account.stop();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await runIfEntry(import.meta.url, 'connectors.json', benchConnectors, (results) => {
  console.log(
    table(
      ['round', 'direct p50 ms', 'gateway p50 ms', 'direct p99 ms', 'gateway p99 ms'],
      results.rounds.map((r, i) => [i + 1, r.direct_p50_ms, r.gateway_p50_ms, r.direct_p99_ms, r.gateway_p99_ms]),
    ),
  );
  console.log(
    `\nadded by the gateway, p50 (median over rounds of gateway − direct): ${results.added_p50_ms} ms (goal ≤ ${results.goal_ms} ms: ${results.added_p50_ms <= results.goal_ms ? 'met' : 'NOT met'})`,
  );
});
