/**
 * The hostile-path corpus: every case goes over real HTTP (`GET /files/...`, raw request
 * target), and the decoded form also through tRPC (`files.get`, `files.read`) and the guard
 * itself. None may answer 2xx, and no answer may carry a byte of a protected or outside file.
 */
import { link, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveWorkspacePath } from '../../server/agent/files/guard.js';
import { startTestAgent, tempDir, type TestAgent } from '../support/servers.js';
import { rawRequest, trpcQuery } from './http.js';

let agent: TestAgent;
// Made before collection: the corpus names them.
const ws = await tempDir('agent-ws');
const outside = await tempDir('outside');
/** From the workspace to the outside directory, e.g. `../outside-abc123`. */
const toOutside = path.relative(ws, outside);

const LEAKS = [/SECRET-/, /OUTSIDE-/, /root:.*:0:0:/, /SQLite format/];

const SENSITIVE = [
  '.env',
  '.ENV',
  '.Env',
  '.env.local',
  '.env.production',
  '.ENV.LOCAL',
  '.env.',
  'agent.db',
  'AGENT.DB',
  'Agent.Db',
  'agent.db-wal',
  'agent.db-shm',
  'agent.db-journal',
  'AGENT.DB-WAL',
];
const DEPTHS = ['', 'a/', 'a/b/', 'a/b/c/'];

beforeAll(async () => {
  agent = await startTestAgent({ AGENT_WORKSPACE: ws });
  await writeFile(path.join(outside, 'secret.txt'), 'OUTSIDE-SECRET');
  await mkdir(path.join(ws, 'public'), { recursive: true });
  await mkdir(path.join(ws, 'a/b/c'), { recursive: true });
  await writeFile(path.join(ws, 'public/hello.txt'), 'PUBLIC');
  for (const depth of DEPTHS) {
    for (const name of ['.env', '.env.local', '.env.production', 'agent.db-journal']) {
      await writeFile(path.join(ws, depth, name), `SECRET-${depth}${name}`);
    }
    // The agent keeps its own agent.db in its state directory; these are planted copies the guard must still refuse.
    await writeFile(path.join(ws, depth, 'agent.db'), `SECRET-${depth || 'root'}-db`);
  }
  await symlink(path.join(outside, 'secret.txt'), path.join(ws, 'link-out'));
  await symlink(outside, path.join(ws, 'dir-out'));
  await symlink(path.join(toOutside, 'secret.txt'), path.join(ws, 'rel-out'));
  await symlink('.env', path.join(ws, 'link-env'));
  await symlink('agent.db', path.join(ws, 'link-db'));
  await symlink('../agent.db-wal', path.join(ws, 'public/link-wal'));
  await symlink('/nonexistent/nowhere', path.join(ws, 'dangling'));
  await symlink('loop', path.join(ws, 'loop'));
  await symlink('..', path.join(ws, 'public/up'));
  await symlink('../..', path.join(ws, 'public/upup'));
  await symlink('/etc', path.join(ws, 'public/etc'));
  await symlink('../a/b', path.join(ws, 'public/b-link'));
  await link(path.join(ws, '.env'), path.join(ws, 'public/env-copy.txt'));
  await link(path.join(ws, 'agent.db'), path.join(ws, 'public/innocent.db'));
});

afterAll(async () => {
  await agent.stop();
  await rm(outside, { recursive: true, force: true });
});

interface Case {
  name: string;
  /** Request target after `/files/`, exactly as sent on the wire. */
  raw: string;
  /** Expected status; undefined: any 4xx. */
  status?: number;
}

function corpus(): Case[] {
  const out = () => `${toOutside}/secret.txt`;
  const up = '../../../../../../../../';
  const cases: Case[] = [];
  const add = (name: string, raw: string, status?: number) => cases.push({ name, raw, status });

  // Traversal, in every encoding of `../`
  const dotdots: Array<[string, string, number | undefined]> = [
    ['plain', '../', 403],
    ['%2F', '..%2F', 403],
    ['%2f', '..%2f', 403],
    ['%2e%2e/', '%2e%2e/', 403],
    ['%2E%2E/', '%2E%2E/', 403],
    ['%2e%2e%2f', '%2e%2e%2f', 403],
    ['.%2e/', '.%2e/', 403],
    ['%2e./', '%2e./', 403],
    ['backslash', '..\\', 403],
    ['%5C', '..%5C', 403],
    ['%5c', '..%5c', 403],
    ['%2e%2e%5c', '%2e%2e%5c', 403],
    ['mixed /\\', '..%2F..\\', 403],
    ['double %252e', '%252e%252e/', 404],
    ['double %252f', '..%252f', 404],
    ['double %255c', '..%255c', 404],
    ['overlong %c0%ae', '%c0%ae%c0%ae/', 400],
    ['overlong %c0%af', '..%c0%af', 400],
    ['overlong %e0%80%ae', '%e0%80%ae%e0%80%ae/', 400],
    ['fullwidth dots', '%EF%BC%8E%EF%BC%8E/', 404],
    ['one-dot leader', '%E2%80%A4%E2%80%A4/', 404],
    ['small full stop', '%EF%B9%92%EF%B9%92/', 404],
    ['two-dot leader', '%E2%80%A5/', 404],
    ['fullwidth solidus', '..%EF%BC%8F', 404],
    ['....//', '....//', 404],
    ['..;/', '..;/', 404],
    ['dot-dot-space', '..%20/', 404],
  ];
  for (const [label, dd, status] of dotdots) {
    add(`traversal ${label} → /etc/passwd`, `${dd.repeat(8)}etc/passwd`, status);
    add(`traversal ${label} → outside sibling`, out().replaceAll('../', dd), status);
  }
  add('inner traversal', 'public/../../etc/passwd', 403);
  add('inner traversal encoded', 'public/%2e%2e/%2e%2e/etc/passwd', 403);
  add('deep inner traversal', `a/b/c/${up}etc/passwd`, 403);
  add('traversal out and into the sibling', `../${path.basename(outside)}/secret.txt`, 403);

  // Absolute paths
  add('absolute //etc/passwd', '/etc/passwd', 403);
  add('absolute %2F', '%2Fetc%2Fpasswd', 403);
  add('absolute %2f', '%2fetc/passwd', 403);
  add('absolute backslash', '%5Cetc%5Cpasswd', 403);
  add('absolute raw backslash', '\\etc\\passwd', 403);
  add('drive letter C:\\', 'C:%5CWindows%5Cwin.ini', 403);
  add('drive letter c:/', 'c:/Windows/win.ini', 403);
  add('UNC', '%5C%5Cserver%5Cshare', 403);
  add('absolute outside secret', encodeURIComponent(path.join(outside, 'secret.txt')), 403);
  add('absolute workspace .env', encodeURIComponent(path.join(ws, '.env')), 403);
  add('absolute /proc/self/environ', '%2Fproc%2Fself%2Fenviron', 403);
  add('file: url', 'file:%2F%2F%2Fetc%2Fpasswd', 404);

  // NUL bytes
  add('NUL suffix', 'public/hello.txt%00.png', 403);
  add('NUL in traversal', '..%00/etc/passwd', 403);
  add('NUL before .env', '%00.env', 403);
  add('NUL alone', '%00', 403);

  // Sensitive names at every depth and case
  for (const depth of DEPTHS) for (const name of SENSITIVE) add(`sensitive ${depth}${name}`, `${depth}${name}`, 403);
  add('sensitive encoded %2Eenv', '%2Eenv', 403);
  add('sensitive encoded .e%6Ev', '.e%6Ev', 403);
  add('sensitive via public/../.env', 'public/../.env', 403);
  add('sensitive via ./.env', './.env', 403);
  add('sensitive trailing slash', '.env/', 403);
  add('sensitive as directory', '.env/x', 403);
  add('sensitive via backslash', 'a%5C.env', 403);
  add('sensitive via double slash', 'a//.env', 403);
  add('agent.db encoded dot', 'agent%2Edb', 403);

  // Symlinks
  add('symlink to outside file', 'link-out', 403);
  add('symlinked dir to outside', 'dir-out/secret.txt', 403);
  add('relative symlink to outside', 'rel-out', 403);
  add('symlink to .env', 'link-env', 403);
  add('symlink to agent.db', 'link-db', 403);
  add('nested symlink to agent.db-wal', 'public/link-wal', 403);
  add('dangling symlink', 'dangling', 403);
  add('symlink loop', 'loop', 403);
  add('symlink to root, then .env', 'public/up/.env', 403);
  add('symlink to root, then agent.db', 'public/up/agent.db', 403);
  add('symlink to parent of root', `public/upup/${path.basename(outside)}/secret.txt`, 403);
  add('symlink to /etc', 'public/etc/passwd', 403);
  add('symlinked dir, then sensitive', 'public/b-link/.env', 403);
  add('symlink chain up then traversal', 'public/up/../etc/passwd', 403);
  add('hard link to .env', 'public/env-copy.txt', 403);
  add('hard link to agent.db', 'public/innocent.db', 403);

  // Very long paths
  add('over 4096 characters', `${'a/'.repeat(2100)}x`, 400);
  add('component over 255 bytes', 'x'.repeat(300), 400);
  add('long traversal', `${'../'.repeat(1400)}etc/passwd`, 400);
  add('long encoded traversal', `${'%2e%2e%2f'.repeat(1400)}etc/passwd`, 400);
  add('encoded traversal, 500 levels', `${'%2e%2e%2f'.repeat(500)}etc/passwd`, 403);
  add('many ./ then .env', `${'./'.repeat(1000)}.env`, 403);
  return cases;
}

const CASES = corpus();

describe('hostile-path corpus', () => {
  it('has at least 100 cases', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(100);
  });

  it('still serves an ordinary file, also through a symlink that stays inside', async () => {
    for (const target of ['public/hello.txt', 'public/up/public/hello.txt', 'public/./hello.txt', 'a/../public/hello.txt']) {
      const res = await rawRequest(agent.url, `/files/${target}`, { headers: agent.auth });
      expect(res.status, target).toBe(200);
      expect(res.body.toString()).toBe('PUBLIC');
    }
  });

  it.each(CASES)('GET /files/ $name', async ({ raw, status }) => {
    const res = await rawRequest(agent.url, `/files/${raw}`, { headers: agent.auth });
    const body = res.body.toString('latin1');
    for (const leak of LEAKS) expect(body).not.toMatch(leak);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    if (status !== undefined) expect(res.status).toBe(status);
    expect(JSON.parse(body)).toEqual({ detail: expect.any(String), code: expect.any(String) });
  });

  it('refuses every case through tRPC (files.get, files.read) and the guard, decoded once', async () => {
    let checked = 0;
    for (const { raw, name, status } of CASES) {
      let decoded: string;
      try {
        decoded = raw.split('/').map(decodeURIComponent).join('/');
      } catch {
        continue; // not valid percent-encoding: the HTTP layer refuses it (400) before any path exists
      }
      if (name.startsWith('absolute //')) decoded = `/${decoded}`;
      const guard = await resolveWorkspacePath(ws, decoded).then(
        () => undefined,
        (e: { status?: number }) => e.status,
      );
      if (status === 403 || status === 400) expect(guard, name).toBe(status);
      for (const proc of ['files.get', 'files.read'] as const) {
        const res = await trpcQuery(agent.url, proc, { path: decoded }, agent.auth);
        if (status !== undefined) expect(res.status, `${proc} ${name}`).toBe(status);
        expect(res.status, `${proc} ${name}`).toBeGreaterThanOrEqual(400);
        const text = JSON.stringify(res.body);
        for (const leak of LEAKS) expect(text).not.toMatch(leak);
      }
      checked++;
    }
    expect(checked).toBeGreaterThan(90);
  });
});
