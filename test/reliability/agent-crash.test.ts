/**
 * kill -9 of the agent at random moments (≥ 20 rounds) while chat runs stream (a scripted
 * OpenAI-compatible model, the production provider path), uploads stream in and subagent runs
 * work in the background (some end before the kill and leave a pending announcement, some are
 * cut by it). After each restart:
 * - `agent.db` passes `PRAGMA integrity_check`;
 * - history is consistent: every accepted user message exactly once, no duplicated entries,
 *   every assistant text whole chunks in order;
 * - no pending message is lost or doubled: every subagent run that exists has ended (a run the
 *   kill cut is `interrupted` at start) and has exactly one announcement, over all collections;
 * - no partial upload is left (`.part` files are swept at start), and every file that did land
 *   is complete and intact (uploads only appear by an atomic link/rename of a finished file).
 */
import { randomBytes } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { startAgentProcess, type AgentProcess } from '../support/agent-process.js';
import { tempDir } from '../support/servers.js';
import { lastUserText, startScriptedModel, type ModelRequest, type ScriptedModel, type ScriptedStep } from '../support/scripted-model.js';
import { isSubagent, spawnResponder } from '../subagents/helpers.js';

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 20);
/**
 * No round starts after this (a hang guard; fewer than 20 rounds then fails the test). A round
 * takes 3–5 s on the shared 2-core machine, most of it the agent's start.
 */
const BUDGET_MS = 200_000;
const UPLOAD_BYTES = 4 * 1024 * 1024;
const CHUNKS = 300;
const WHOLE = /^(w\d+ )*$/;

const killNow = (agent: AgentProcess) => {
  if (agent.child.exitCode === null && agent.child.signalCode === null) agent.child.kill('SIGKILL');
  return agent.exited;
};

/** Streams an upload of UPLOAD_BYTES bytes all equal to `fill`, in 64 KiB chunks with pauses. */
function slowUpload(url: string, secret: string, name: string, fill: number): Promise<number> {
  const boundary = `crash${randomBytes(6).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const u = new URL(url);
  return new Promise((resolve) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        method: 'POST',
        path: '/files/upload',
        headers: {
          authorization: `Bearer ${secret}`,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': head.length + UPLOAD_BYTES + tail.length,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      },
    );
    req.on('error', () => resolve(0));
    req.write(head);
    const chunk = Buffer.alloc(64 * 1024, fill);
    let sent = 0;
    const pump = () => {
      if (req.destroyed) return;
      if (sent >= UPLOAD_BYTES) {
        req.end(tail);
        return;
      }
      sent += chunk.length;
      req.write(chunk);
      setTimeout(pump, 8);
    };
    pump();
  });
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) if (e.isFile()) out.push(path.join(e.parentPath, e.name));
  return out;
}

/**
 * Starts a chat and reads its stream until it ends or breaks; true when any event arrived (the
 * kill may then cut the stream: still started). `onEvent` is called at the first one.
 */
async function chat(url: string, secret: string, chatId: string, message: string, onEvent: () => void): Promise<boolean> {
  let got = false;
  try {
    const res = await fetch(`${url}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ chat_id: chatId, message }),
    });
    if (res.status !== 200 || !res.body) return false;
    const reader = res.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!got && Buffer.from(value).toString().includes('data:')) {
        got = true;
        onEvent();
      }
    }
  } catch {
    // the agent was killed mid-stream
  }
  return got;
}

/**
 * The model: a `delegate r<n>` message makes the chat spawn two subagents, a `quick` one (it
 * ends in tens of ms, usually before the kill) and a `slow` one (it outlives most kills); any
 * other message streams CHUNKS numbered words.
 */
function responder(request: ModelRequest): ScriptedStep {
  const text = lastUserText(request);
  if (isSubagent(request) || text.startsWith('delegate')) {
    const round = /r\d+$/.exec(text)?.[0];
    const subagent = (task: string): ScriptedStep => ({ text: { count: task.startsWith('quick') ? 3 : CHUNKS, chunk: (i) => `s${i} ` }, delayMs: 3 });
    return spawnResponder(
      [`quick ${round}`, `slow ${round}`].map((task) => ({ label: task, task })),
      subagent,
    )(request);
  }
  return { text: { count: CHUNKS, chunk: (i) => `w${i} ` }, delayMs: 3 };
}

type Entry = { type: string; name?: string; content?: string };
type Subagent = { id: string; status: string; error: string | null };

describe('kill -9 of the agent during chat runs, uploads and subagent runs', () => {
  const cleanup: string[] = [];
  let model: ScriptedModel;
  afterAll(async () => {
    await model?.close();
    for (const d of cleanup) await rm(d, { recursive: true, force: true });
  });

  it(`${ROUNDS} rounds: integrity_check ok, history consistent, no pending message lost or doubled, no partial upload, every landed file intact`, async () => {
    const started = Date.now();
    const workspace = await tempDir('crash-ws');
    // agent.db lives beside the workspace (AGENT_STATE_DIR's default).
    const stateDir = `${workspace}.state`;
    cleanup.push(workspace, stateDir);
    const secret = randomBytes(24).toString('hex');
    const auth = { authorization: `Bearer ${secret}` };
    const get = async <T>(url: string, p: string): Promise<T> => {
      const res = await fetch(`${url}${p}`, { headers: auth });
      expect(res.status, p).toBe(200);
      return (await res.json()) as T;
    };
    const fills = new Map<string, number>(); // file name → byte it must consist of
    const verified = new Set<string>(); // landed files found whole
    let landed = 0;
    let partialsSwept = 0;
    model = await startScriptedModel({ responder });
    const start = () => startAgentProcess({ AGENT_SECRET: secret, AGENT_WORKSPACE: workspace, MODEL: model.modelSpec, AGENT_MODEL_RETRIES: '0' });
    const sent = new Map<string, { chatId: string; started: boolean }>(); // user message → chat
    const announcements = new Map<string, string[]>(); // subagent run id → its collected announcements
    const endedBeforeKill = new Set<string>(); // runs seen ended while the agent was alive

    const checkHistory = async (url: string) => {
      for (const chatId of new Set([...sent.values()].map((v) => v.chatId))) {
        const { messages } = await get<{ messages: Entry[] }>(url, `/chat/${chatId}/history?limit=1000`);
        const users = messages.filter((m) => m.type === 'text' && m.name === 'user').map((m) => m.content!);
        expect(new Set(users).size, `duplicated user message in ${chatId}`).toBe(users.length);
        for (const [message, v] of sent) if (v.chatId === chatId && v.started) expect(users, `lost user message ${message}`).toContain(message);
        for (const m of messages.filter((x) => x.type === 'text' && x.name !== 'user')) {
          if (chatId === 'delegate') {
            expect(m.content, 'half-written assistant text').toBe('started');
            continue;
          }
          expect(m.content ?? '', 'half-written assistant text').toMatch(WHOLE);
          const indices = [...(m.content ?? '').matchAll(/w(\d+) /g)].map((x) => Number(x[1]));
          expect(indices, 'assistant chunks out of order').toEqual(indices.map((_, i) => i));
        }
      }
    };

    /** Collects the pending messages and checks every subagent run has exactly one announcement. */
    const checkPending = async (url: string) => {
      const { messages } = await get<{ messages: Array<{ content: string; source: string; chat_id: string }> }>(url, '/pending');
      for (const m of messages) {
        const id = /\(([0-9a-f]{12})\)/.exec(m.content)?.[1];
        expect(m.source === 'subagent' && m.chat_id === 'delegate' && id, `unexpected pending message ${m.content}`).toBeTruthy();
        announcements.set(id!, [...(announcements.get(id!) ?? []), m.content]);
      }
      const { subagents } = await get<{ subagents: Subagent[] }>(url, '/subagents');
      for (const run of subagents) {
        // A restart ends every run the kill cut: none is left running, each is announced once.
        expect(run.status, `run ${run.id} still running after a restart`).not.toBe('running');
        expect(announcements.get(run.id)?.length ?? 0, `announcements of run ${run.id}`).toBe(1);
      }
      for (const id of endedBeforeKill) expect(announcements.get(id)?.length ?? 0, `announcement of ${id}, ended before the kill, lost`).toBe(1);
      for (const id of announcements.keys())
        expect(
          subagents.some((r) => r.id === id),
          `announcement of an unknown run ${id}`,
        ).toBe(true);
    };

    const checkAfterRestart = async (agent: AgentProcess) => {
      await checkHistory(agent.url);
      await checkPending(agent.url);
      // The database is sound, no .part file survived, landed files are whole.
      const db = new Database(path.join(stateDir, 'agent.db'), { readonly: true, fileMustExist: true });
      try {
        expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      } finally {
        db.close();
      }
      const files = await walk(workspace);
      expect(files.filter((f) => f.endsWith('.part'))).toEqual([]);
      // A landed file is checked once: it only ever appears whole (and is never written again).
      for (const f of files.filter((x) => x.includes(`${path.sep}uploads${path.sep}`) && !verified.has(x))) {
        const base = path.basename(f).replace(/ \(\d+\)(?=\.bin$)/, '');
        const fill = fills.get(base);
        expect(fill, `unexpected file ${f}`).toBeDefined();
        const bytes = await readFile(f);
        expect(bytes.length).toBe(UPLOAD_BYTES);
        expect(bytes.every((b) => b === fill)).toBe(true);
        verified.add(f);
      }
    };

    let rounds = 0;
    for (; rounds < ROUNDS && Date.now() - started < BUDGET_MS; rounds++) {
      const agent = await start();
      await checkAfterRestart(agent);
      // Load: three uploads (~0.6 s each), two streaming chats (~1 s) and a chat that spawns two
      // subagents, all at once; then kill -9 at a random moment.
      const uploads = [0, 1, 2].map((i) => {
        const name = `r${rounds}-${i}.bin`;
        const fill = (rounds * 3 + i) % 251;
        fills.set(name, fill);
        return slowUpload(agent.url, secret, name, fill);
      });
      // The kill lands at a random moment once the runs stream (not while the agent is still
      // idle, which on a loaded machine would be most of a fixed window).
      let streaming: () => void = () => undefined;
      const firstEvent = new Promise<void>((resolve) => (streaming = resolve));
      const chats = [
        ['crash-0', `message r${rounds} c0`],
        ['crash-1', `message r${rounds} c1`],
        ['delegate', `delegate r${rounds}`],
      ].map(async ([chatId, message]) => {
        sent.set(message!, { chatId: chatId!, started: false });
        const started = await chat(agent.url, secret, chatId!, message!, streaming);
        sent.set(message!, { chatId: chatId!, started });
      });
      await Promise.race([firstEvent, new Promise((r) => setTimeout(r, 5_000))]);
      await new Promise((r) => setTimeout(r, Math.random() * 1000));
      // Runs that have ended by now have announced it: that announcement must survive the kill.
      const { subagents } = await get<{ subagents: Subagent[] }>(agent.url, '/subagents');
      for (const run of subagents) if (run.status !== 'running' && !announcements.has(run.id)) endedBeforeKill.add(run.id);
      partialsSwept += (await walk(workspace)).filter((f) => f.endsWith('.part')).length;
      await killNow(agent);
      landed += (await Promise.all(uploads)).filter((s) => s === 200).length;
      await Promise.all(chats);
    }
    const final = await start();
    try {
      await checkAfterRestart(final);
      const { subagents } = await get<{ subagents: Subagent[] }>(final.url, '/subagents');
      const interrupted = subagents.filter((r) => r.error === 'interrupted').length;
      console.log(
        `${rounds} rounds in ${((Date.now() - started) / 1000).toFixed(0)} s: ${[...sent.values()].filter((v) => v.started).length} chat runs streamed until the kill, ` +
          `${landed} uploads completed before it, ${partialsSwept} partial files present at kill time (all swept), ` +
          `${subagents.length} subagent runs (${endedBeforeKill.size} ended before a kill, ${interrupted} interrupted by one), each announced exactly once`,
      );
      expect(rounds).toBeGreaterThanOrEqual(Math.min(ROUNDS, 20));
      // Every fault path was exercised, not only the easy ones.
      expect(partialsSwept).toBeGreaterThan(0);
      expect(endedBeforeKill.size).toBeGreaterThan(0);
      expect(interrupted).toBeGreaterThan(0);
    } finally {
      await killNow(final);
    }
  }, 280_000);
});
