/**
 * The operator's model key opens generation and nothing else (server/account/agents/egress/model-routes.ts).
 * The attack (fourth security review): with an agent's egress token, GET /v1/files, DELETE
 * /v1/files/x and POST /v1/batches went to the model host with the operator's key added, and the
 * GET and DELETE were charged nothing. Here a real gateway, on an agent's Unix sockets (local
 * agents) and on its TCP address (agents in pods, `listenTcp` with the provisioner's token check),
 * sits in front of a real upstream standing in for the model host: every request there that is not
 * a POST to a generation endpoint, in any spelling, is 403 EGRESS_ROUTE_REFUSED and reaches nothing;
 * the generation calls go out with the key and are metered.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressGateway, type ModelMeter, type OpenGateway } from '../../server/account/agents/egress/gateway.js';
import { egressToken, egressTokenChecker } from '../../server/account/agents/provisioners/kubernetes/objects.js';

const OPERATOR_KEY = 'sk-operator-model-routes-test';
const quiet = pino({ level: 'silent' }, new Writable({ write: (_c, _e, cb) => cb() }));

const agent = { id: randomUUID(), secret: randomBytes(32).toString('base64url'), userId: randomUUID() };

let model: http.Server;
let modelHost: string;
/** Every request the model host received: method, path, and the credential it carried. */
const seen: Array<{ method: string; url: string; authorization?: string }> = [];
/** Tokens each metered call reserved. */
const reserved: number[] = [];

const dir = mkdtempSync(path.join(os.tmpdir(), 'egress-routes-'));
const sockets = { agent: path.join(dir, 'egress.sock'), exec: path.join(dir, 'exec-egress.sock') };
let local: OpenGateway;
let tcp: OpenGateway & { port: number };

beforeAll(async () => {
  model = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization });
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ usage: { prompt_tokens: 3, completion_tokens: 2 } })));
  });
  await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
  modelHost = `127.0.0.1:${(model.address() as AddressInfo).port}`;
  const meter: ModelMeter = {
    reserve: async (_userId, tokens) => {
      reserved.push(tokens);
      return { settle: async () => {} };
    },
  };
  const gateway = new EgressGateway(
    [{ origin: new URL(`http://${modelHost}`), credentials: { authorization: `Bearer ${OPERATOR_KEY}` }, model: true }],
    quiet,
    {
      limits: { maxConnections: 32, idleTimeoutMs: 10_000, maxDurationMs: 60_000, maxBodyBytes: 1024 * 1024 },
      meter,
    },
  );
  local = await gateway.open(sockets, { agentId: agent.id, userId: agent.userId });
  tcp = await gateway.listenTcp(
    { host: '127.0.0.1', port: 0 },
    egressTokenChecker(async (id) => (id === agent.id ? agent : undefined)),
  );
});

afterAll(async () => {
  await local?.close();
  await tcp?.close();
  model.closeAllConnections();
  await new Promise<void>((resolve) => model.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

type Way = 'agent socket' | 'exec socket (proxy form)' | 'pod TCP address';
const WAYS: Way[] = ['agent socket', 'exec socket (proxy form)', 'pod TCP address'];

/** One raw request (the path sent byte for byte) to the model host through the gateway, the way `way` reaches it. */
function send(way: Way, method: string, target: string, body?: string): Promise<{ status: number; body: string }> {
  const where: http.RequestOptions =
    way === 'pod TCP address'
      ? { host: '127.0.0.1', port: tcp.port, path: target, headers: { 'proxy-authorization': `Bearer ${egressToken(agent.id, agent.secret)}` } }
      : way === 'agent socket'
        ? { socketPath: sockets.agent, path: target }
        : { socketPath: sockets.exec, path: `http://${modelHost}${target}` };
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        ...where,
        method,
        headers: { ...where.headers, host: modelHost, authorization: 'Bearer agent-sent', ...(body ? { 'content-type': 'application/json' } : {}) },
        agent: false,
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const GENERATION_BODY = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 });

/** What the review reproduced, and the spellings that would pass a looser check. */
const REFUSED: Array<[string, string]> = [
  ['GET', '/v1/files'],
  ['DELETE', '/v1/files/file-x'],
  ['POST', '/v1/batches'],
  ['POST', '/v1/files'],
  ['POST', '/v1/fine_tuning/jobs'],
  ['GET', '/v1/models'],
  ['POST', '/v1/messages/batches'],
  ['GET', '/v1/chat/completions'],
  ['PUT', '/v1/chat/completions'],
  ['DELETE', '/v1/responses'],
  ['HEAD', '/v1/chat/completions'],
  ['OPTIONS', '/v1/chat/completions'],
  ['POST', '/v1/batches?/chat/completions'],
  ['POST', '/v1/chat/completions?purpose=batch'],
  ['POST', '/v1/files/../chat/completions'],
  ['POST', '/v1/files/..%2Fchat/completions'],
  ['POST', '/v1/files%2F..%2F..%2Fv1/chat/completions'],
  ['POST', '/v1/./chat/completions'],
  ['POST', '/v1//chat/completions'],
  ['POST', '/v1/chat/completions/'],
  ['POST', '/v1/chat%2Fcompletions'],
  ['POST', '/v1/chat/completions;x'],
  ['POST', '/chat/completions\\..\\files'],
];

describe("the operator's model key opens only generation calls", () => {
  for (const way of WAYS) {
    it(`refuses every other method and path to the model host with 403 EGRESS_ROUTE_REFUSED, on the ${way}, and nothing reaches it`, async () => {
      const before = seen.length;
      for (const [method, target] of REFUSED) {
        const answer = await send(way, method, target, method === 'POST' ? GENERATION_BODY : undefined);
        expect(answer.status, `${method} ${target}`).toBe(403);
        if (method !== 'HEAD') expect(JSON.parse(answer.body).error.code, `${method} ${target}`).toBe('EGRESS_ROUTE_REFUSED');
      }
      expect(seen.slice(before)).toEqual([]);
    });

    it(`forwards and meters POST to the generation endpoints on the ${way}, with the key only on the agent's own client`, async () => {
      for (const target of ['/v1/chat/completions', '/v1/completions', '/v1/messages', '/v1/responses', '/chat/completions']) {
        const reservations = reserved.length;
        const answer = await send(way, 'POST', target, GENERATION_BODY);
        expect(answer.status, target).toBe(200);
        expect(seen.at(-1)).toMatchObject({ method: 'POST', url: target });
        // exec's relay never gets the operator's key; what the command sent passes (it pays for its own).
        expect(seen.at(-1)?.authorization).toBe(way === 'exec socket (proxy form)' ? 'Bearer agent-sent' : `Bearer ${OPERATOR_KEY}`);
        expect(answer.body).not.toContain(OPERATOR_KEY);
        expect(reserved.length, `${target} metered`).toBe(reservations + 1);
      }
    });
  }
});
