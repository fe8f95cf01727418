/**
 * Hostile tenants (server/account/agents/provisioners/local/sandbox.ts): real local agents started by a real account
 * service in its default mode, driven through the proxy by the scripted model's tool calls
 * (`run: <command>` becomes an `exec` call, `read: <path>` a `read_file` call, and the model then
 * answers with the tool's result, so the reply shows what the tenant saw). Each attack must fail
 * and leak nothing; the other tenant and the account service must keep answering.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenPair } from '@contracts/account/tokens.js';
import { lastUserText, type ScriptedModel, startScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { openSse, readFrames } from '../support/sse.js';

const CANARY = `canary-${randomBytes(12).toString('hex')}`;
const MODEL_KEY = `sk-operator-${randomBytes(12).toString('hex')}`;

let model: ScriptedModel;
let account: TestAccount;
let api: string;

/** exec and read_file on request; the tool's result is the answer. */
function startHostileModel(): Promise<ScriptedModel> {
  return startScriptedModel({
    responder: (request) => {
      const last = request.messages.at(-1);
      if (last?.role === 'tool') return { text: typeof last.content === 'string' ? last.content : JSON.stringify(last.content) };
      const text = lastUserText(request);
      if (text.startsWith('run: ')) return { toolCalls: [{ name: 'exec', args: { command: text.slice(5), timeout_seconds: 20 } }] };
      if (text.startsWith('read: ')) return { toolCalls: [{ name: 'read_file', args: { path: text.slice(6) } }] };
      return { text: `echo: ${text}` };
    },
  });
}

beforeAll(async () => {
  model = await startHostileModel();
  // Visible in this process's /proc/<pid>/environ: the account service runs in it.
  process.env.SANDBOX_CANARY = CANARY;
  account = await startTestAccount('pglite', {
    AGENT_PROVISIONER: 'local',
    AGENT_IDLE_TIMEOUT: '0',
    MODEL: model.modelSpec,
    MODEL_API_KEY: MODEL_KEY,
    AGENT_MEMORY_MB: '384',
    AGENT_MAX_PROCESSES: '64',
    AGENT_WORKSPACE_QUOTA_MB_GUEST: '20',
  });
  api = `${account.url}/api/v1`;
});
afterAll(async () => {
  await account?.stop();
  await model?.close();
  delete process.env.SANDBOX_CANARY;
});

const json = { 'content-type': 'application/json' };

async function guest(): Promise<string> {
  const res = await fetch(`${api}/auth/guest`, { method: 'POST', headers: json, body: JSON.stringify({ device_id: randomUUID() }) });
  return ((await res.json()) as TokenPair).access_token;
}

/** A full account: a guest whose flag is flipped, signed in again (its agent starts after that). */
async function fullAccount(): Promise<string> {
  const deviceId = randomUUID();
  const first = (await (
    await fetch(`${api}/auth/guest`, { method: 'POST', headers: json, body: JSON.stringify({ device_id: deviceId }) })
  ).json()) as TokenPair;
  const me = (await (await fetch(`${api}/auth/me`, { headers: { authorization: `Bearer ${first.access_token}` } })).json()) as { user_id: string };
  await account.services.store.db.user.update({ where: { id: me.user_id }, data: { tier: 'full' } });
  const again = await fetch(`${api}/auth/guest`, { method: 'POST', headers: json, body: JSON.stringify({ device_id: deviceId }) });
  return ((await again.json()) as TokenPair).access_token;
}

/** One chat turn through the proxy; the reply text (for `run:`/`read:`, the tool's result). */
async function say(token: string, message: string): Promise<string> {
  const stream = await openSse(`${api}/agent/chat`, {
    method: 'POST',
    headers: { ...json, authorization: `Bearer ${token}` },
    body: JSON.stringify({ message, chat_id: `c-${randomUUID()}` }),
  });
  expect(stream.status).toBe(200);
  const frames = await readFrames(stream);
  stream.close();
  return frames.map((f) => (f.data.type === 'text' || f.data.type === 'error' ? String(f.data.content) : '')).join('');
}

/** An exec through the chat: the command's output, and the code of any error the tool reported. */
async function run(token: string, command: string): Promise<string> {
  const reply = await say(token, `run: ${command}`);
  const result = JSON.parse(reply) as { output: string; error?: { code: string } };
  return result.error ? `${result.output}\n${result.error.code}` : result.output;
}

/** The host path of a user's workspace. */
async function workspaceOf(token: string): Promise<string> {
  const me = (await (await fetch(`${api}/auth/me`, { headers: { authorization: `Bearer ${token}` } })).json()) as { user_id: string };
  const agent = await account.services.agents.registry.forUser(me.user_id);
  return path.join(account.dataDir, 'agents', agent?.id ?? 'missing', 'workspace');
}

/** Connects from inside the sandbox with node: prints CONNECTED or the error code. */
const connectFrom = (host: string, port: number) =>
  `node -e "const s=require('net').connect(${port},'${host}');s.on('connect',()=>{console.log('CONNECTED');process.exit(0)});s.on('error',e=>{console.log('REFUSED',e.code);process.exit(0)});setTimeout(()=>{console.log('REFUSED timeout');process.exit(0)},3000)"`;

describe('a tenant inside its sandbox', () => {
  let alice: string;
  let bob: string;
  let bobWorkspace: string;
  const bobSecret = `bob-private-${randomBytes(8).toString('hex')}`;

  beforeAll(async () => {
    [alice, bob] = await Promise.all([guest(), fullAccount()]);
    expect(await run(bob, `echo ${bobSecret} > diary.txt && cat diary.txt`)).toContain(bobSecret);
    bobWorkspace = await workspaceOf(bob);
  });

  it('runs exec in its own workspace, and files it writes show in the tree', async () => {
    const out = await run(alice, 'mkdir -p notes && echo hello > notes/a.txt && ls notes && cat notes/a.txt && id -u && pwd');
    expect(out).toContain('a.txt');
    expect(out).toContain('hello');
    expect(out).toContain('1000');
    expect(out).toContain('/workspace');
    const tree = (await (await fetch(`${api}/agent/workspace/tree`, { headers: { authorization: `Bearer ${alice}` } })).json()) as unknown;
    expect(JSON.stringify(tree)).toContain('a.txt');
  });

  it('cannot read the signing key, the secrets key or the account database by any path', async () => {
    // Every long string of the key file (the private key among them) must stay unseen.
    const keyStrings = [...(await readFile(account.services.config.signingKeysFile, 'utf8')).matchAll(/"([\w+/=-]{32,})"/g)].map((m) => m[1] as string);
    expect(keyStrings.length).toBeGreaterThan(0);
    const secretsKey = (await readFile(path.join(account.dataDir, 'agent-secrets.key'))).toString('base64').slice(0, 24);
    const dataDir = account.dataDir;
    const attempts = [
      `cat ${account.services.config.signingKeysFile}`,
      'cat ../../../signing-keys.json; cat ../../signing-keys.json; cat ../signing-keys.json',
      `cat ${dataDir}/agent-secrets.key | base64; ls -la ${dataDir}`,
      'ls -la / /run /root /home 2>&1; find / -name "signing-keys.json" -o -name "agent-secrets.key" -o -name "PG_VERSION" 2>/dev/null | head',
    ];
    for (const command of attempts) {
      const out = await run(alice, command);
      for (const secret of keyStrings) expect(out).not.toContain(secret);
      expect(out).not.toContain(secretsKey);
      expect(out).not.toContain('PG_VERSION');
    }
    expect(await run(alice, `ls ${dataDir} 2>&1`)).toMatch(/No such file/);
  });

  it("cannot reach another tenant's workspace by absolute path, relative path or symlink", async () => {
    const bobAgentId = path.basename(path.dirname(bobWorkspace));
    const out = await run(
      alice,
      `cat ${bobWorkspace}/diary.txt; cat ../${bobAgentId}/workspace/diary.txt; cat ../../agents/${bobAgentId}/workspace/diary.txt; ls .. 2>&1`,
    );
    expect(out).not.toContain(bobSecret);
    // A symlink made by exec, then read through the file tools and the files API.
    await run(alice, `ln -sf ${bobWorkspace}/diary.txt stolen.txt; ln -sfn ${bobWorkspace} bobdir`);
    expect(await say(alice, 'read: stolen.txt')).not.toContain(bobSecret);
    expect(await say(alice, 'read: bobdir/diary.txt')).not.toContain(bobSecret);
    for (const file of ['stolen.txt', 'bobdir/diary.txt']) {
      const res = await fetch(`${api}/agent/files/${file}`, { headers: { authorization: `Bearer ${alice}` } });
      expect([403, 404]).toContain(res.status);
      expect(await res.text()).not.toContain(bobSecret);
    }
  });

  it('sees no other process: not the account service environment (canary), not its command lines, not the provider key', async () => {
    const out = await run(
      alice,
      'ls /proc | grep -c "^[0-9]"; cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n"; cat /proc/*/cmdline 2>/dev/null | tr "\\0" " "; env',
    );
    expect(out).not.toContain(CANARY);
    expect(out).not.toContain(MODEL_KEY);
    expect(out).not.toContain(account.dataDir);
    const processes = Number(out.split('\n').find((line) => /^\d+$/.test(line.trim())));
    expect(processes).toBeGreaterThan(0);
    expect(processes).toBeLessThan(20);
  });

  it('has no network: not the account service, PostgreSQL, Redis or anything else on the host', async () => {
    const port = Number(new URL(account.url).port);
    for (const [host, target] of [
      ['127.0.0.1', port],
      ['127.0.0.1', 5432],
      ['127.0.0.1', 6379],
      ['1.1.1.1', 443],
    ] as const) {
      const out = await run(alice, connectFrom(host, target));
      expect(out).toContain('REFUSED');
      expect(out).not.toContain('CONNECTED');
    }
    // The agent's own sockets are not visible to its commands either.
    expect(await run(alice, 'ls -A /run /run/sandbox 2>&1')).not.toMatch(/agent\.sock|egress\.sock/);
  });

  it("the model gets the operator's key from the gateway; the agent never held it", async () => {
    const before = model.requestHeaders.length;
    expect(await say(alice, 'hello')).toBe('echo: hello');
    const headers = model.requestHeaders.slice(before);
    expect(headers.length).toBeGreaterThan(0);
    for (const h of headers) expect(h.authorization).toBe(`Bearer ${MODEL_KEY}`);
  });

  it('a disk filler hits the quota: exec says so and uploads get 507 QUOTA_EXCEEDED', async () => {
    const filler = await guest();
    const out = await run(filler, 'dd if=/dev/zero of=a.bin bs=1M count=15 2>&1; dd if=/dev/zero of=b.bin bs=1M count=15 2>&1; ls -la');
    expect(out).toContain('QUOTA_EXCEEDED');
    const form = new FormData();
    form.set('file', new Blob([new Uint8Array(1024)]), 'more.bin');
    const res = await fetch(`${api}/agent/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${filler}` }, body: form });
    expect(res.status).toBe(507);
    expect(await res.json()).toMatchObject({ code: 'QUOTA_EXCEEDED' });
    // Deleting makes room again.
    await run(filler, 'rm -f a.bin b.bin');
    const retry = new FormData();
    retry.set('file', new Blob([new Uint8Array(1024)]), 'more.bin');
    expect((await fetch(`${api}/agent/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${filler}` }, body: retry })).status).toBe(200);
  });

  it('a fork flood and a memory hog stay in their cgroup: the other tenant and /auth/me keep answering', async () => {
    const attacker = await guest();
    await say(attacker, 'warm up');
    // Either may end its own agent (the memory hog may take the agent with it): settled, not awaited.
    const attacks = Promise.allSettled([
      run(attacker, 'f() { f | f & }; f; sleep 8'),
      run(attacker, `node -e "const a=[];for(;;)a.push(Buffer.alloc(1<<20,1))"`),
    ]);
    await new Promise((r) => setTimeout(r, 1_500));
    const started = Date.now();
    const [reply, me] = await Promise.all([say(bob, 'still there?'), fetch(`${api}/auth/me`, { headers: { authorization: `Bearer ${bob}` } })]);
    const elapsed = Date.now() - started;
    console.log(`other tenant's reply during the attacks: ${elapsed} ms`);
    expect(reply).toBe('echo: still there?');
    expect(me.status).toBe(200);
    expect(elapsed).toBeLessThan(10_000);
    await attacks;
    // The attacker's agent lives on (or came back) and answers again.
    expect(await say(attacker, 'after')).toBe('echo: after');
  });
});

describe('the egress gateway', () => {
  /** A raw request on an agent's gateway socket, as the agent would send it. */
  function viaGateway(socketPath: string, host: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = http.request({ socketPath, path: '/v1/models', method: 'GET', headers: { host } }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('refuses every host not on the allowlist with 403 EGRESS_DENIED, and on the model host all but generation calls', async () => {
    const token = await guest();
    await say(token, 'start');
    const running = (account.services.agents.provisioner as unknown as { processes(): Array<{ url: string }> }).processes();
    const socket = path.join(path.dirname(running[0]!.url.slice('unix:'.length)), 'egress.sock');
    for (const host of ['127.0.0.1:5432', '127.0.0.1:6379', `127.0.0.1:${new URL(account.url).port}`, 'example.com:443', '169.254.169.254:80', '']) {
      const answer = await viaGateway(socket, host);
      expect(answer.status).toBe(403);
      expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'EGRESS_DENIED' } });
    }
    const modelHost = new URL(model.baseUrl).host;
    // On the list, but its key opens only generation (the agent's chat above went through).
    const listing = await viaGateway(socket, modelHost);
    expect(listing.status).toBe(403);
    expect(JSON.parse(listing.body)).toMatchObject({ error: { code: 'EGRESS_ROUTE_REFUSED' } });
  });
});

describe('exec network', () => {
  const curlStatus = (url: string) => `curl -s -o /dev/null -w 'status=%{http_code}' --max-time 5 ${url}; echo " exit=$?"`;

  it('is none by default: not even the allow-listed model host', async () => {
    const token = await guest();
    const out = await run(token, curlStatus(`${model.baseUrl}/models`));
    expect(out).toContain('status=000');
  });

  it('with AGENT_EXEC_NETWORK=allowlist commands reach allow-listed hosts through the gateway, and nothing else', async () => {
    const open = await startTestAccount('pglite', {
      AGENT_PROVISIONER: 'local',
      AGENT_IDLE_TIMEOUT: '0',
      MODEL: model.modelSpec,
      MODEL_API_KEY: MODEL_KEY,
      AGENT_EXEC_NETWORK: 'allowlist',
    });
    try {
      const base = `${open.url}/api/v1`;
      const res = await fetch(`${base}/auth/guest`, { method: 'POST', headers: json, body: JSON.stringify({ device_id: randomUUID() }) });
      const token = ((await res.json()) as TokenPair).access_token;
      const exec = async (command: string) => {
        const stream = await openSse(`${base}/agent/chat`, {
          method: 'POST',
          headers: { ...json, authorization: `Bearer ${token}` },
          body: JSON.stringify({ message: `run: ${command}`, chat_id: `c-${randomUUID()}` }),
        });
        const frames = await readFrames(stream);
        stream.close();
        return (JSON.parse(frames.map((f) => (f.data.type === 'text' ? String(f.data.content) : '')).join('')) as { output: string }).output;
      };
      // The model host answers generation calls only (below), not a listing.
      expect(await exec(curlStatus(`${model.baseUrl}/models`))).toContain('status=403');
      expect(await exec(curlStatus(`http://127.0.0.1:${new URL(open.url).port}/healthz`))).toContain('status=403');
      expect(await exec(curlStatus('http://127.0.0.1:5432/'))).toContain('status=403');
      // https goes through CONNECT, refused for hosts off the list.
      expect(await exec("curl -s -o /dev/null -w 'connect=%{http_connect}' --max-time 5 https://example.com/")).toContain('connect=403');
      // Without the proxy there is still no route out.
      expect(await exec(`env -u http_proxy -u HTTP_PROXY ${curlStatus(`${model.baseUrl}/models`)}`)).toContain('status=000');
      // A command calling the model host itself gets no operator key added: the model sees the
      // command's own key, or none. The agent's own calls (these exec turns) still carry it.
      const before = model.requestHeaders.length;
      const call = (auth: string) =>
        `curl -s -o /dev/null -w 'status=%{http_code}' --max-time 10 ${auth} -H 'content-type: application/json' -d '{"model":"scripted","messages":[{"role":"user","content":"from exec"}]}' ${model.baseUrl}/chat/completions`;
      expect(await exec(call(''))).toContain('status=200');
      expect(await exec(call("-H 'authorization: Bearer command-own'"))).toContain('status=200');
      const fromExec = model.requests.flatMap((request, index) =>
        index >= before && lastUserText(request) === 'from exec' ? [model.requestHeaders[index]] : [],
      );
      expect(fromExec.map((h) => h?.authorization)).toEqual([undefined, 'Bearer command-own']);
      const fromAgent = model.requestHeaders.slice(before).filter((h) => !fromExec.includes(h));
      expect(fromAgent.length).toBeGreaterThan(0);
      for (const h of fromAgent) expect(h.authorization).toBe(`Bearer ${MODEL_KEY}`);
    } finally {
      await open.stop();
    }
  });
});

describe('without a sandbox', () => {
  it('agents still chat and take files, but have no exec, when bubblewrap is missing', async () => {
    const plain = await startTestAccount('pglite', {
      AGENT_PROVISIONER: 'local',
      AGENT_IDLE_TIMEOUT: '0',
      MODEL: model.modelSpec,
      AGENT_SANDBOX_BWRAP: '/nonexistent/bwrap',
    });
    try {
      const base = `${plain.url}/api/v1`;
      const res = await fetch(`${base}/auth/guest`, { method: 'POST', headers: json, body: JSON.stringify({ device_id: randomUUID() }) });
      const token = ((await res.json()) as TokenPair).access_token;
      const before = model.requests.length;
      const stream = await openSse(`${base}/agent/chat`, {
        method: 'POST',
        headers: { ...json, authorization: `Bearer ${token}` },
        body: JSON.stringify({ message: 'hi', chat_id: 'plain' }),
      });
      const frames = await readFrames(stream);
      stream.close();
      expect(frames.map((f) => (f.data.type === 'text' ? f.data.content : '')).join('')).toBe('echo: hi');
      const offered = (model.requests[before]?.tools ?? []).map((t) => t.function.name);
      expect(offered).toContain('read_file');
      expect(offered).not.toContain('exec');
      const form = new FormData();
      form.set('file', new Blob(['x']), 'x.txt');
      expect((await fetch(`${base}/agent/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form })).status).toBe(200);
    } finally {
      await plain.stop();
    }
  });
});
