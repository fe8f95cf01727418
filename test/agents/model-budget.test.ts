/**
 * Model token budgets (server/account/agents/egress/model-usage.ts): the egress gateway reads usage from
 * each model answer, the account store counts it per user and day, and a spent budget refuses the
 * next chat message (429 BUDGET_EXCEEDED with Retry-After) or, inside a run, the next model call
 * (an `error` event naming it). The scripted model reports 10 prompt tokens plus one per text chunk.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { clearOfMidnightUtc, MIDNIGHT_MARGIN_MS } from '../support/clock.js';
import { ModelBudget, UsageScanner } from '../../server/account/agents/egress/model-usage.js';
import type { HotSql } from '../../server/account/hot-sql.js';
import { ProactiveBudget } from '@contracts/agent/model-source.js';
import type { TokenPair } from '@contracts/account/tokens.js';
import { lastUserText, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

/**
 * Usage is recorded as the model's answer closes, a moment after the client may have seen `done`:
 * waits until the user's count reached `atLeast` tokens.
 */
async function usageRecorded(account: TestAccount, token: string, atLeast: number): Promise<void> {
  const me = (await (await fetch(`${account.url}/api/v1/auth/me`, { headers: { authorization: `Bearer ${token}` } })).json()) as { user_id: string };
  for (const deadline = Date.now() + 10_000; (await account.services.modelBudget.status(me.user_id)).used < atLeast; ) {
    if (Date.now() > deadline) throw new Error(`usage of ${atLeast} tokens was not recorded`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// Daily figures are filled and read back: no test straddles midnight UTC (support/clock.ts).
beforeEach(() => clearOfMidnightUtc(), MIDNIGHT_MARGIN_MS + 5_000);
describe('reading usage from model answers', () => {
  const scan = (...chunks: string[]) => {
    const scanner = new UsageScanner();
    for (const chunk of chunks) scanner.push(chunk);
    return scanner.end();
  };

  it('reads OpenAI chat streams, split anywhere, and ignores lines without usage', () => {
    const stream = `data: {"choices":[{"delta":{"content":"hi"}}]}\n\ndata: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7}}\n\ndata: [DONE]\n\n`;
    expect(scan(stream)).toEqual({ tokensIn: 12, tokensOut: 7 });
    const cut = Math.floor(stream.length / 2) + 5;
    expect(scan(stream.slice(0, cut), stream.slice(cut))).toEqual({ tokensIn: 12, tokensOut: 7 });
  });

  it('reads the Responses API, Anthropic streams and plain JSON bodies', () => {
    expect(scan('data: {"type":"response.completed","response":{"usage":{"input_tokens":30,"output_tokens":4}}}\n')).toEqual({ tokensIn: 30, tokensOut: 4 });
    expect(
      scan(
        'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":25,"output_tokens":1}}}\n',
        'data: {"type":"message_delta","usage":{"output_tokens":9}}\n',
      ),
    ).toEqual({ tokensIn: 25, tokensOut: 9 });
    expect(scan('{\n  "usage": {"prompt_tokens": 3, "completion_tokens": 2}\n}'.replace(/\n/g, ''))).toEqual({ tokensIn: 3, tokensOut: 2 });
  });

  it('survives garbage: broken JSON, negative or absurd figures, endless lines', () => {
    expect(scan('data: {"usage": {broken\n', 'data: {"usage":{"prompt_tokens":-5,"completion_tokens":"9"}}\n')).toEqual({ tokensIn: 0, tokensOut: 0 });
    expect(scan(`data: ${'x'.repeat(2 * 1024 * 1024)}`, '\ndata: {"usage":{"prompt_tokens":1,"completion_tokens":1}}\n')).toEqual({
      tokensIn: 1,
      tokensOut: 1,
    });
  });
});

describe('daily budgets, through the proxy to real agents', () => {
  let model: ScriptedModel;
  let account: TestAccount;
  let api: string;
  const json = { 'content-type': 'application/json' };

  beforeAll(async () => {
    model = await startScriptedModel({
      responder: (request) => {
        const last = request.messages.at(-1);
        if (last?.role === 'tool') return { text: 'after the tool' };
        if (lastUserText(request) === 'use a tool') return { toolCalls: [{ name: 'list_files', args: {} }] };
        return { text: 'ok' };
      },
    });
    account = await startTestAccount('pglite', {
      AGENT_PROVISIONER: 'local',
      AGENT_IDLE_TIMEOUT: '0',
      MODEL: model.modelSpec,
      // One plain answer costs 11 tokens: a guest gets two, a full account many.
      MODEL_DAILY_TOKENS_GUEST: '15',
      MODEL_DAILY_TOKENS: '1000',
    });
    api = `${account.url}/api/v1`;
  });
  afterAll(async () => {
    await account?.stop();
    await model?.close();
  });

  const guest = async (): Promise<string> => {
    const res = await fetch(`${api}/auth/guest`, { method: 'POST', headers: json, body: JSON.stringify({ device_id: randomUUID() }) });
    return ((await res.json()) as TokenPair).access_token;
  };
  const chat = (token: string, message: string) =>
    fetch(`${api}/agent/chat`, {
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${token}` },
      body: JSON.stringify({ message, chat_id: `c-${randomUUID()}` }),
    });

  it('counts each model call and refuses the message after the budget is spent, with the reset time; others are unaffected', async () => {
    const spender = await guest();
    expect(await (await chat(spender, 'one')).text()).toContain('"type":"done"');
    expect(await (await chat(spender, 'two')).text()).toContain('"type":"done"');
    await usageRecorded(account, spender, 22);
    const refused = await chat(spender, 'three');
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as { code: string; detail: string };
    expect(body.code).toBe('BUDGET_EXCEEDED');
    const resets = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 1)).toISOString();
    expect(body.detail).toContain(resets);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(24 * 3600);
    // Another guest still chats.
    const other = await guest();
    expect(await (await chat(other, 'hello')).text()).toContain('"type":"text"');
    // The account's metrics count the tokens, by kind of user only.
    const metrics = await (await fetch(`${account.url}/metrics`)).text();
    expect(metrics).toMatch(/model_tokens_total\{[^}]*direction="in"[^}]*user="guest"[^}]*\} (\d+)/);
    expect(metrics).not.toMatch(/model_tokens_total\{[^}]*user="[0-9a-f-]{36}"/);
  });

  it('a run that spends the budget mid-way ends with an error event naming it', async () => {
    const token = await guest();
    expect(await (await chat(token, 'first')).text()).toContain('"type":"done"');
    await usageRecorded(account, token, 11);
    // 11 tokens used of 15: the tool call passes, the call after the tool is refused by the gateway.
    const text = await (await chat(token, 'use a tool')).text();
    expect(text).toContain('"type":"tool_use"');
    expect(text).toMatch(/"type":"error","content":"[^"]*BUDGET_EXCEEDED/);
    expect(text).toContain('"type":"done"');
  });

  it("an agent's ask before a proactive turn reads today's usage once, its own and all guests' together, and answers the contract's shape", async () => {
    let reads = 0;
    const sql: HotSql = (strings, ...values) => {
      reads += 1;
      return account.services.store.sql(strings, ...values);
    };
    const userId = randomUUID();
    const guestBudget = (guestsTotal: number) => new ModelBudget(sql, { account: 1000, guest: 15, guestsTotal }, async () => ({ guest: true }));
    await guestBudget(0).record(userId, { tokensIn: 5, tokensOut: 3 }, true);
    const resets = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 1)).toISOString();

    reads = 0;
    const fits = await guestBudget(1_000_000).proactive(userId, 7);
    expect(reads).toBe(1);
    expect(fits).toStrictEqual(ProactiveBudget.parse(fits));
    expect(fits).toStrictEqual({ allowed: true, used: 8, limit: 15, resets_at: resets });
    // A turn of 8 more tokens would take the guest to 16 of 15; all guests' ceiling of 1 token is spent.
    expect(await guestBudget(1_000_000).proactive(userId, 8)).toStrictEqual({ allowed: false, used: 8, limit: 15, resets_at: resets });
    expect(await guestBudget(1).proactive(userId, 1)).toStrictEqual({ allowed: false, used: 8, limit: 15, resets_at: resets });
    expect(reads).toBe(3);
  });

  it('an agent asking in a loop costs the store one read a second, and a spend shows in the next answer', async () => {
    let reads = 0;
    let lookups = 0;
    const sql: HotSql = (strings, ...values) => {
      reads += 1;
      return account.services.store.sql(strings, ...values);
    };
    const budget = new ModelBudget(sql, { account: 1000, guest: 15, guestsTotal: 0 }, async () => {
      lookups += 1;
      return { guest: false };
    });
    const userId = randomUUID();
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 100 }, () => budget.proactive(userId, 10)));
    for (let n = 0; n < 100; n += 1) answers.push(await budget.proactive(userId, 10));
    const seconds = Math.ceil((Date.now() - started) / 1000);
    expect(answers.every((answer) => answer.allowed && answer.used === 0)).toBe(true);
    // 200 asks: one read of each kind per second they took, and not one per ask.
    expect(reads).toBeLessThanOrEqual(seconds + 1);
    expect(lookups).toBeLessThanOrEqual(seconds + 1);

    // A call's usage recorded here is in the very next answer, within the second.
    await budget.record(userId, { tokensIn: 600, tokensOut: 395 }, false);
    expect(await budget.proactive(userId, 10)).toMatchObject({ allowed: false, used: 995 });
    expect(await budget.proactive(userId, 5)).toMatchObject({ allowed: true, used: 995 });
    // A call in flight holds its tokens at once.
    const call = await budget.reserve(userId, 3, 'task');
    expect(await budget.proactive(userId, 5)).toMatchObject({ allowed: false, used: 995 });
    await call.settle({ tokensIn: 0, tokensOut: 0 });
    expect(await budget.proactive(userId, 5)).toMatchObject({ allowed: true });
  });
});

describe('the service-wide guest budget', () => {
  it('once all guests together spent MODEL_DAILY_TOKENS_GUESTS_TOTAL, a new guest is refused and a full account is not', async () => {
    const model = await startScriptedModel({ responder: () => ({ text: 'ok' }) });
    const account = await startTestAccount('pglite', {
      AGENT_PROVISIONER: 'local',
      AGENT_IDLE_TIMEOUT: '0',
      MODEL: model.modelSpec,
      MODEL_DAILY_TOKENS_GUESTS_TOTAL: '1',
    });
    try {
      const api = `${account.url}/api/v1`;
      const signIn = async (deviceId = randomUUID()) =>
        (
          (await (
            await fetch(`${api}/auth/guest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ device_id: deviceId }) })
          ).json()) as TokenPair
        ).access_token;
      const chat = (token: string) =>
        fetch(`${api}/agent/chat`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ message: 'hi', chat_id: `c-${randomUUID()}` }),
        });
      const spender = await signIn();
      expect(await (await chat(spender)).text()).toContain('"type":"done"');
      await usageRecorded(account, spender, 1);
      const second = await chat(await signIn());
      expect(second.status).toBe(429);
      expect(await second.json()).toMatchObject({ code: 'BUDGET_EXCEEDED' });
      // A full account keeps chatting.
      const deviceId = randomUUID();
      const first = await signIn(deviceId);
      const me = (await (await fetch(`${api}/auth/me`, { headers: { authorization: `Bearer ${first}` } })).json()) as { user_id: string };
      await account.services.store.db.user.update({ where: { id: me.user_id }, data: { tier: 'full' } });
      const full = await chat(await signIn(deviceId));
      expect(full.status).toBe(200);
      expect(await full.text()).toContain('"type":"text"');
    } finally {
      await account.stop();
      await model.close();
    }
  });
});
