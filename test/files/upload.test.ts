import { createHash } from 'node:crypto';
import { readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_UPLOAD_BYTES } from '../../server/agent/files/upload.js';
import { startTestAgent, tempDir, type TestAgent } from '../support/servers.js';

let agent: TestAgent;
let outside: string;

beforeAll(async () => {
  agent = await startTestAgent();
  outside = await tempDir('outside');
  await symlink(outside, path.join(agent.workspace, 'dir-out'));
  await writeFile(path.join(agent.workspace, 'a-file'), 'x');
});
afterAll(async () => {
  await agent.stop();
  await rm(outside, { recursive: true, force: true });
});

/** Every file under `dir`, relative, `/`-separated (agent.db and its siblings left out). */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => !e.isDirectory() && !/^agent\.db/.test(e.name))
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
}

async function partials(): Promise<string[]> {
  return (await filesUnder(agent.workspace)).filter((f) => /\.upload-[0-9a-f]+\.part$/.test(f));
}

function form(file: Blob | undefined, filename: string, fields: Record<string, string> = {}, fieldsFirst = false): FormData {
  const fd = new FormData();
  const addFields = () => {
    for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  };
  if (fieldsFirst) addFields();
  if (file) fd.append('file', file, filename);
  if (!fieldsFirst) addFields();
  return fd;
}

async function upload(body: FormData | string, headers: Record<string, string> = {}) {
  const res = await fetch(`${agent.url}/files/upload`, { method: 'POST', headers: { ...agent.auth, ...headers }, body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const sha = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

describe('POST /files/upload: size limit', () => {
  it('accepts exactly 50 MB, byte for byte', async () => {
    const data = Buffer.alloc(MAX_UPLOAD_BYTES, 'upload-bytes-');
    const res = await upload(form(new Blob([data]), 'big.bin'));
    expect(res).toEqual({ status: 200, body: { path: 'uploads/big.bin', size: MAX_UPLOAD_BYTES, name: 'big.bin' } });
    expect(sha(await readFile(path.join(agent.workspace, 'uploads/big.bin')))).toBe(sha(data));
    await rm(path.join(agent.workspace, 'uploads/big.bin'));
  });

  it('refuses 50 MB + 1 byte with 413 and leaves nothing behind', async () => {
    const res = await upload(form(new Blob([Buffer.alloc(MAX_UPLOAD_BYTES + 1, 'z')]), 'too-big.bin'));
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ detail: expect.any(String), code: 'PAYLOAD_TOO_LARGE' });
    expect(await filesUnder(agent.workspace)).not.toContain('uploads/too-big.bin');
    expect(await partials()).toEqual([]);
  });

  it('refuses a declared body far over the limit before reading it', async () => {
    const res = await new Promise<number>((resolve, reject) => {
      const { port } = new URL(agent.url);
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/files/upload',
          headers: { ...agent.auth, 'content-type': 'multipart/form-data; boundary=XX', 'content-length': String(200 * 1024 * 1024) },
        },
        (r) => {
          r.resume();
          resolve(r.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.write('--XX\r\n');
    });
    expect(res).toBe(413);
  });
});

describe('POST /files/upload: aborts and concurrency', () => {
  it('leaves no partial file when the client goes away mid-upload', async () => {
    const { port } = new URL(agent.url);
    const req = request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/files/upload',
      headers: { ...agent.auth, 'content-type': 'multipart/form-data; boundary=BOUNDARY', 'transfer-encoding': 'chunked' },
    });
    req.on('error', () => undefined);
    req.write('--BOUNDARY\r\nContent-Disposition: form-data; name="file"; filename="aborted.bin"\r\nContent-Type: application/octet-stream\r\n\r\n');
    const chunk = Buffer.alloc(256 * 1024, 'a');
    for (let i = 0; i < 8; i++) req.write(chunk);
    // Wait until the agent is writing the temporary file, then cut the connection.
    for (let i = 0; i < 100 && (await partials()).length === 0; i++) await sleep(20);
    expect((await partials()).length).toBe(1);
    req.destroy();
    for (let i = 0; i < 100 && (await partials()).length > 0; i++) await sleep(20);
    expect(await partials()).toEqual([]);
    expect((await filesUnder(agent.workspace)).filter((f) => f.includes('aborted'))).toEqual([]);
  });

  it('stores two concurrent uploads of the same name as two whole files', async () => {
    const size = 3 * 1024 * 1024;
    const [a, b] = await Promise.all([
      upload(form(new Blob([Buffer.alloc(size, 'A')]), 'same.txt', { path: 'race' })),
      upload(form(new Blob([Buffer.alloc(size, 'B')]), 'same.txt', { path: 'race' })),
    ]);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(new Set([a.body.path, b.body.path])).toEqual(new Set(['race/same.txt', 'race/same (1).txt']));
    const contents = await Promise.all(['race/same.txt', 'race/same (1).txt'].map((f) => readFile(path.join(agent.workspace, f), 'latin1')));
    expect(contents.map((c) => c.length)).toEqual([size, size]);
    expect(contents.map((c) => new Set(c).size)).toEqual([1, 1]); // never a mix of A and B
    expect(new Set(contents.map((c) => c[0]))).toEqual(new Set(['A', 'B']));
  });

  it('never overwrites: a third upload of the name gets the next suffix', async () => {
    const res = await upload(form(new Blob(['third']), 'same.txt', { path: 'race' }));
    expect(res.body).toEqual({ path: 'race/same (2).txt', size: 5, name: 'same (2).txt' });
    expect(await readFile(path.join(agent.workspace, 'race/same.txt'), 'latin1')).toMatch(/^[AB]/);
  });
});

describe('POST /files/upload: target directory', () => {
  it('defaults to `uploads`, and takes `path` before or after the file', async () => {
    expect((await upload(form(new Blob(['1']), 'one.txt'))).body.path).toBe('uploads/one.txt');
    expect((await upload(form(new Blob(['2']), 'two.txt', { path: 'deep/er/dir' }, false))).body.path).toBe('deep/er/dir/two.txt');
    expect((await upload(form(new Blob(['3']), 'three.txt', { path: 'first' }, true))).body.path).toBe('first/three.txt');
    expect((await upload(form(new Blob(['4']), 'four.txt', { path: '.' }))).body.path).toBe('four.txt');
    expect((await upload(form(new Blob(['5']), 'five.txt', { path: '' }))).body.path).toBe('uploads/five.txt');
    expect(await readFile(path.join(agent.workspace, 'deep/er/dir/two.txt'), 'utf8')).toBe('2');
    expect(await partials()).toEqual([]);
  });

  it.each([
    ['../escape', 403],
    ['../../tmp', 403],
    ['/tmp', 403],
    ['\\tmp', 403],
    ['..\\escape', 403],
    ['a/../../escape', 403],
    ['C:\\Windows', 403],
    ['.env', 403],
    ['a/.ENV.local', 403],
    ['agent.db-wal', 403],
    ['dir-out', 403],
    ['dir-out/sub', 403],
    ['x\u0000y', 403],
    ['a'.repeat(5000), 400],
  ])('refuses the target %j (path before and after the file)', async (target, status) => {
    for (const fieldsFirst of [true, false]) {
      const res = await upload(form(new Blob(['payload']), 'evil.txt', { path: target }, fieldsFirst));
      expect(res.status).toBe(status);
      expect(res.body).toMatchObject({ code: expect.any(String) });
    }
    expect(await filesUnder(outside)).toEqual([]);
    expect((await filesUnder(agent.workspace)).filter((f) => f.includes('evil'))).toEqual([]);
    expect(await partials()).toEqual([]);
  });

  it('judges the name in its target directory, not at the root', async () => {
    // `dir-out` at the root leads outside; a file of that name in uploads/ is an ordinary file.
    const res = await upload(form(new Blob(['ok']), 'dir-out'));
    expect(res).toEqual({ status: 200, body: { path: 'uploads/dir-out', size: 2, name: 'dir-out' } });
  });

  it('refuses a target that is a file with 409', async () => {
    const res = await upload(form(new Blob(['x']), 'x.txt', { path: 'a-file' }));
    expect(res).toMatchObject({ status: 409, body: { code: 'NOT_A_DIRECTORY' } });
  });
});

describe('POST /files/upload: names and bodies', () => {
  it.each([
    ['../../evil.txt', 'evil.txt'],
    ['C:\\Users\\me\\report.pdf', 'report.pdf'],
    ['  spaced.txt  ', 'spaced.txt'],
    ['trailing...', 'trailing'],
    ['...', 'upload'],
    ['', 'upload'],
    ['résumé 履歴書.pdf', 'résumé 履歴書.pdf'],
    ['\u202Efdp.exe', 'fdp.exe'],
  ])('sanitizes the file name %j → %j', async (raw, expected) => {
    const dir = `names/${createHash('md5').update(raw).digest('hex')}`;
    const res = await upload(form(new Blob(['n']), raw, { path: dir }));
    expect(res.status).toBe(200);
    expect(res.body.name).toBe(expected);
    expect(await stat(path.join(agent.workspace, dir, expected))).toBeTruthy();
  });

  it('strips control characters from encoded names (multipart filename*, tRPC header)', async () => {
    const body = `--XX\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''bad%01name%7F%0A.txt\r\n\r\nn\r\n--XX--\r\n`;
    const res = await upload(body, { 'content-type': 'multipart/form-data; boundary=XX' });
    expect(res).toEqual({ status: 200, body: { path: 'uploads/badname.txt', size: 1, name: 'badname.txt' } });
    const raw = await upload(form(new Blob(['n']), 'raw\u0001control.txt'));
    expect(raw).toMatchObject({ status: 400, body: { code: 'MALFORMED_MULTIPART' } }); // a control character in a header is malformed
    const trpc = await fetch(`${agent.url}/trpc/files.upload`, {
      method: 'POST',
      headers: { ...agent.auth, 'content-type': 'application/octet-stream', 'x-file-name': 'ctl%00%1Fname.txt' },
      body: 'n',
    });
    expect(((await trpc.json()) as { result: { data: { json: { name: string } } } }).result.data.json.name).toBe('ctlname.txt');
  });

  it('bounds long names and keeps the extension', async () => {
    const res = await upload(form(new Blob(['n']), `${'é'.repeat(300)}.tar.gz`, { path: 'names' }));
    expect(res.status).toBe(200);
    const name = String(res.body.name);
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(200);
    expect(name.endsWith('.gz')).toBe(true);
  });

  it.each(['.env', '.env.production', 'AGENT.DB', 'agent.db-journal'])('refuses the protected name %j with 403', async (name) => {
    const res = await upload(form(new Blob(['SECRET=1']), name, { path: '.' }));
    expect(res.status).toBe(403);
    expect((await filesUnder(agent.workspace)).filter((f) => f.toLowerCase().startsWith('.env'))).toEqual([]);
  });

  it('answers 400 without a `file` field', async () => {
    expect(await upload(form(undefined, '', { path: 'uploads' }))).toMatchObject({ status: 400, body: { code: 'MISSING_FILE' } });
    const other = new FormData();
    other.append('document', new Blob(['x']), 'x.txt');
    expect(await upload(other)).toMatchObject({ status: 400, body: { code: 'MISSING_FILE' } });
  });

  it('answers 400 for a malformed multipart body and 415 for another type', async () => {
    const broken = await upload('--nope\r\n', { 'content-type': 'multipart/form-data' });
    expect(broken).toMatchObject({ status: 400, body: { code: 'MALFORMED_MULTIPART' } });
    const truncated = await upload('--XX\r\nContent-Disposition: form-data; name="file"; filename="t.txt"\r\n\r\nabc', {
      'content-type': 'multipart/form-data; boundary=XX',
    });
    expect(truncated.status).toBe(400);
    const json = await upload('{"file":"x"}', { 'content-type': 'application/json' });
    expect(json).toMatchObject({ status: 415, body: { code: 'UNSUPPORTED_MEDIA_TYPE' } });
    expect(await partials()).toEqual([]);
  });

  it('answers 401 without the secret and writes nothing', async () => {
    const res = await fetch(`${agent.url}/files/upload`, { method: 'POST', body: form(new Blob(['x']), 'anon.txt') });
    expect(res.status).toBe(401);
    expect((await filesUnder(agent.workspace)).filter((f) => f.includes('anon'))).toEqual([]);
  });
});

describe('files.upload over tRPC (octet-stream)', () => {
  const trpcUpload = (body: BodyInit, headers: Record<string, string>) =>
    fetch(`${agent.url}/trpc/files.upload`, { method: 'POST', headers: { ...agent.auth, 'content-type': 'application/octet-stream', ...headers }, body });

  it('streams the body into place with the name and directory from headers', async () => {
    const res = await trpcUpload(Buffer.alloc(1_000_000, 'q'), { 'x-file-name': encodeURIComponent('naïve.bin'), 'x-upload-path': 'via-trpc' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { result: { data: { json: unknown } } }).result.data.json).toEqual({
      path: 'via-trpc/naïve.bin',
      size: 1_000_000,
      name: 'naïve.bin',
    });
  });

  it('refuses a missing name (400), a hostile directory (403) and no secret (401)', async () => {
    expect((await trpcUpload('x', {})).status).toBe(400);
    expect((await trpcUpload('x', { 'x-file-name': 'a.txt', 'x-upload-path': encodeURIComponent('../out') })).status).toBe(403);
    const anon = await fetch(`${agent.url}/trpc/files.upload`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream', 'x-file-name': 'a.txt' },
      body: 'x',
    });
    expect(anon.status).toBe(401);
    expect(await partials()).toEqual([]);
  });
});
