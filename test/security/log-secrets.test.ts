/**
 * What the logs of both services hold: a log is read by more people (operators, a log service)
 * and kept longer than any request, so a secret that reaches it outlives its purpose there. The
 * attacks: someone with the log replays a sign-in link's token, an OAuth callback's code or
 * state, or reads a user's chat text that a tRPC query carried in its URL.
 */
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestAccount, startTestAgent, type TestAccount, type TestAgent } from '../support/servers.js';

const SECRETS = {
  token: 'magic-link-token-0123456789abcdef',
  code: 'oauth-code-0123456789abcdef',
  state: 'oauth-state-0123456789abcdef',
  idToken: 'eyJhbGciOiJFZERTQSJ9.id-token-payload.signature',
  chat: 'my bank PIN is 4711 please remember it',
};

/** A logger like the services' own (info level) whose lines land in `lines`. */
function capturingLogger(service: string): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = pino(
    { level: 'info', base: { service } },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  );
  return { log, lines };
}

/** The access log writes its line when the answer's connection closes: wait for `count` of them after `from`. */
async function accessLines(lines: string[], from: number, count: number): Promise<string[]> {
  return vi.waitFor(
    () => {
      const requests = lines.slice(from).filter((line) => JSON.parse(line).msg === 'request');
      if (requests.length < count) throw new Error(`${requests.length} of ${count} access log lines`);
      return requests;
    },
    { timeout: 10_000, interval: 20 },
  );
}

function expectNoSecret(lines: string[]) {
  const all = lines.join('');
  for (const secret of Object.values(SECRETS)) {
    expect(all).not.toContain(secret);
    expect(all).not.toContain(encodeURIComponent(secret));
  }
}

describe('secrets never reach the logs', () => {
  let account: TestAccount;
  let agent: TestAgent;
  const accountLog = capturingLogger('account');
  const agentLog = capturingLogger('agent');

  beforeAll(async () => {
    [account, agent] = await Promise.all([
      startTestAccount('pglite', { LOG_LEVEL: 'info' }, { log: accountLog.log }),
      startTestAgent({ LOG_LEVEL: 'info' }, agentLog.log),
    ]);
  });
  afterAll(async () => {
    await Promise.all([account?.stop(), agent?.stop()]);
  });

  it('a sign-in link token, an OAuth code and state, an ID token and chat text in the query are not in the account service access log', async () => {
    const before = accountLog.lines.length;
    const input = encodeURIComponent(JSON.stringify({ text: SECRETS.chat }));
    const urls = [
      `/auth/verify?token=${SECRETS.token}`,
      `/api/v1/auth/verify-magic-link?token=${SECRETS.token}`,
      `/auth/callback?code=${SECRETS.code}`,
      `/api/v1/auth/oauth/idpa/callback?code=${SECRETS.code}&state=${SECRETS.state}`,
      `/api/v1/auth/oauth/idpa/callback?id_token=${SECRETS.idToken}&state=${SECRETS.state}`,
      `/trpc/tokens.me?input=${input}`,
      `/trpc/tokens.me,tokens.me?batch=1&input=${input}`,
      // A secret that came as a parameter's name, or without a name at all.
      `/auth/verify?${SECRETS.token}`,
    ];
    for (const url of urls) await (await fetch(`${account.url}${url}`)).arrayBuffer();
    const lines = await accessLines(accountLog.lines, before, urls.length);
    expectNoSecret(accountLog.lines);
    // The path stays readable: which endpoint was called, and with which parameters.
    const logged = lines.map((line) => JSON.parse(line).url as string);
    expect(logged).toContain('/auth/verify?token=…');
    expect(logged).toContain('/api/v1/auth/oauth/idpa/callback?code=…&state=…');
    expect(logged).toContain('/trpc/tokens.me?input=…');
  });

  it('chat text in a tRPC query or a REST query is not in the agent access log, nor is a posted message', async () => {
    const before = agentLog.lines.length;
    const input = encodeURIComponent(JSON.stringify({ chat_id: 'c1', text: SECRETS.chat }));
    const requests: [string, RequestInit][] = [
      [`/trpc/chats.list?input=${input}`, { headers: agent.auth }],
      [`/chats/c1/messages?q=${encodeURIComponent(SECRETS.chat)}`, { headers: agent.auth }],
      ['/chats/c1/messages', { method: 'POST', headers: { ...agent.auth, 'content-type': 'application/json' }, body: JSON.stringify({ text: SECRETS.chat }) }],
    ];
    for (const [url, init] of requests) await (await fetch(`${agent.url}${url}`, init)).arrayBuffer();
    await accessLines(agentLog.lines, before, requests.length);
    expectNoSecret(agentLog.lines);
  });
});
