/**
 * DELETE /account over real HTTP: only with a recent sign-in; while the account's local agent is
 * streaming a reply (the stream ends, the agent process and workspace are gone, the tokens stop);
 * no trace of the person left in any table; other accounts untouched; a static agent is handed
 * back to the registry.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalProvisioner } from '../../server/account/agents/provisioners/local/provisioner.js';
import { accountApi, bearer, newWallet, uniqueEmail, type Pair } from '../support/account-api.js';
import { lastUserText, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { events, openSse, readFrames } from '../support/sse.js';

/** Every row of every table of the account store, as text, to search for traces of a person. */
async function everyRow(account: TestAccount): Promise<string> {
  const tables = await account.services.store.db.$queryRaw<Array<{ tablename: string }>>`SELECT tablename FROM pg_tables WHERE schemaname = 'public'`;
  let text = '';
  for (const { tablename } of tables) {
    const rows = await account.services.store.db.$queryRawUnsafe<unknown[]>(`SELECT * FROM "${tablename}"`);
    text += JSON.stringify(rows, (_key, value: unknown) => (typeof value === 'bigint' ? String(value) : value));
  }
  return text;
}

const expectError = async (res: Response, status: number, code: string) => {
  const body = (await res.json()) as { code: string };
  expect({ status: res.status, code: body.code }).toEqual({ status, code });
};

describe('deleting an account with a local agent', () => {
  let account: TestAccount;
  let model: ScriptedModel;
  let api: ReturnType<typeof accountApi>;
  const savedModel = process.env.MODEL;

  beforeAll(async () => {
    model = await startScriptedModel({
      responder: (request) => (lastUserText(request).startsWith('hang') ? { text: ['partial '], hang: true } : { text: 'ok' }),
    });
    process.env.MODEL = model.modelSpec;
    account = await startTestAccount('pglite', { AGENT_PROVISIONER: 'local', AGENT_IDLE_TIMEOUT: '0', MODEL: model.modelSpec });
    api = accountApi(account);
  });
  afterAll(async () => {
    await account?.stop();
    await model?.close();
    if (savedModel === undefined) delete process.env.MODEL;
    else process.env.MODEL = savedModel;
  });

  it('needs a sign-in within the last 10 minutes: 403 REAUTH_REQUIRED, nothing deleted', async () => {
    const pair = await api.email(uniqueEmail('stale'));
    const { user_id: userId, session_id: sessionId } = await api.me(pair);
    await account.services.store.db.session.update({ where: { id: sessionId }, data: { createdAt: new Date(Date.now() - 11 * 60 * 1000) } });
    await expectError(await api.del('/account', bearer(pair)), 403, 'REAUTH_REQUIRED');
    expect(await account.services.store.db.user.count({ where: { id: userId } })).toBe(1);
    expect((await api.get('/auth/me', bearer(pair))).status).toBe(200);
    await expectError(await api.del('/account'), 401, 'MISSING_TOKEN');
  });

  it('while its agent streams: the stream ends, the agent and its workspace are gone, the tokens stop, no trace remains', async () => {
    const email = uniqueEmail('leaving');
    const wallet = newWallet();
    const pair = await api.email(email, { 'user-agent': 'LeavingBrowser/1' });
    await api.wallet(wallet, bearer(pair));
    const other = await api.email(email); // a second session
    const { user_id: userId } = await api.me(pair);
    // Pending credentials that name the person: a mail code and a wallet challenge.
    await account.services.email.request(email);
    await api.post('/auth/wallet/challenge', { address: wallet.address });
    const bystander: Pair = await api.email(uniqueEmail('bystander'));
    const bystanderBefore = await api.json<unknown>(await api.get('/account', bearer(bystander)));

    const stream = await openSse(`${account.url}/api/v1/agent/chat`, {
      method: 'POST',
      headers: { ...bearer(pair), 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hang on', chat_id: 'c1' }),
    });
    expect(events(await readFrames(stream, (f) => f.data.type === 'text' || f.data.type === 'done'))).toEqual([{ type: 'text', content: 'partial ' }]);
    const agent = await account.services.agents.registry.forUser(userId);
    expect(agent).toBeDefined();
    const provisioner = account.services.agents.provisioner as LocalProvisioner;
    const pid = provisioner.processes().find((p) => p.agentId === agent!.id)?.pid;
    expect(pid).toEqual(expect.any(Number));
    const agentDir = path.join(account.dataDir, 'agents', agent!.id);
    expect(existsSync(agentDir)).toBe(true);

    const res = await api.del('/account', bearer(pair));
    expect(res.status).toBe(204);

    await readFrames(stream); // resolves only when the stream has ended
    expect(provisioner.processes().find((p) => p.agentId === agent!.id)).toBeUndefined();
    expect(() => process.kill(pid!, 0)).toThrow();
    expect(existsSync(agentDir)).toBe(false);
    for (const p of [pair, other]) {
      expect((await api.get('/auth/me', bearer(p))).status).toBe(401);
      expect((await api.post('/auth/refresh', { refresh_token: p.refresh_token })).status).toBe(401);
    }
    expect((await api.get('/agent/health', bearer(pair))).status).toBe(401);

    const rows = await everyRow(account);
    for (const trace of [userId, email, wallet.address, wallet.address.toLowerCase(), 'LeavingBrowser/1', agent!.id]) expect(rows).not.toContain(trace);
    expect(await api.json<unknown>(await api.get('/account', bearer(bystander)))).toEqual(bystanderBefore);
    // The methods are free again: the same address signs up afresh.
    expect((await api.me(await api.email(email))).user_id).not.toBe(userId);
  });
});

describe('deleting an account with a static agent', () => {
  let account: TestAccount;
  let api: ReturnType<typeof accountApi>;

  beforeAll(async () => {
    account = await startTestAccount('pglite', { AGENT_PROVISIONER: 'static' });
    api = accountApi(account);
  });
  afterAll(async () => {
    await account.stop();
  });

  it('unassigns the agent: the registry keeps it for reuse, without the user', async () => {
    const pair = await api.email(uniqueEmail('static'));
    const { user_id: userId } = await api.me(pair);
    const { registry } = account.services.agents;
    await registry.add({ name: 'vm-7', url: 'http://127.0.0.1:9', secret: 's'.repeat(32), kind: 'static', userId });
    expect((await api.del('/account', bearer(pair))).status).toBe(204);
    expect(await registry.forUser(userId)).toBeUndefined();
    expect(await registry.byName('vm-7')).toMatchObject({ name: 'vm-7', userId: null });
  });
});
