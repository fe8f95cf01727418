// Run inside an `exec` sandbox by exec-agent-secrets.test.ts: looks for secrets everywhere a
// command can read and prints one JSON report. Argument 1: base64 JSON of needles
// ({name, prefix, length, sha256}); a candidate is a match only when its SHA-256 is the needle's,
// so the scanner never holds a secret it was not able to read. Argument 2 `sockets-only`: only
// try to connect to every socket it can name. SCAN_ROOTS (colon-separated, default `/`): the
// directories whose files it reads (a test kubelet's container sees the host's whole /work).
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { createHash } = require('node:crypto');

const needles = JSON.parse(Buffer.from(process.argv[2] || 'W10=', 'base64').toString());
const socketsOnly = process.argv[3] === 'sockets-only';
const found = [];
const seen = new Set();
const CHUNK = 4 << 20;
const MAX_FILE = 64 << 20;
const MAX_MEM_PER_PROCESS = 2 * 1024 ** 3;

/** Every needle confirmed in `buffer`, reported once per place. */
function search(buffer, where) {
  for (const n of needles) {
    let at = buffer.indexOf(n.prefix);
    while (at !== -1) {
      const candidate = buffer.subarray(at, at + n.length);
      if (candidate.length === n.length && createHash('sha256').update(candidate).digest('hex') === n.sha256) {
        const key = `${n.name}|${where}`;
        if (!seen.has(key)) {
          seen.add(key);
          found.push({ name: n.name, where });
        }
        break;
      }
      at = buffer.indexOf(n.prefix, at + 1);
    }
  }
}

/** Reads a file (or an fd's target) in chunks, searching across chunk borders. */
function scanFile(file, where) {
  let fd;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    if (!fs.fstatSync(fd).isFile()) return false;
    scanFdAt(fd, 0n, MAX_FILE, where);
    return true;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** Readable memory of one process, region by region (what /proc/<pid>/maps says is readable). */
function scanMemory(pid) {
  let maps;
  try {
    maps = fs.readFileSync(`/proc/${pid}/maps`, 'utf8');
  } catch {
    return 0;
  }
  let fd;
  try {
    fd = fs.openSync(`/proc/${pid}/mem`, 'r');
  } catch {
    return 0;
  }
  let total = 0;
  try {
    for (const line of maps.split('\n')) {
      const [range, perms, , , , name] = line.split(/\s+/);
      if (!range || !perms.startsWith('r') || name === '[vvar]' || name === '[vsyscall]' || name === '[vvar_vclock]') continue;
      const [from, to] = range.split('-').map((hex) => BigInt(`0x${hex}`));
      const size = Number(to - from);
      if (total + size > MAX_MEM_PER_PROCESS) break;
      total += scanFdAt(fd, from, size, `mem ${pid} ${name || 'anon'}`);
    }
  } finally {
    fs.closeSync(fd);
  }
  return total;
}

function scanFdAt(fd, start, length, where) {
  const overlap = Math.max(0, ...needles.map((n) => n.length));
  let tail = Buffer.alloc(0);
  let done = 0;
  while (done < length) {
    const chunk = Buffer.alloc(Math.min(CHUNK, length - done));
    let read;
    try {
      read = fs.readSync(fd, chunk, 0, chunk.length, start + BigInt(done));
    } catch {
      break;
    }
    if (read <= 0) break;
    const window = Buffer.concat([tail, chunk.subarray(0, read)]);
    search(window, where);
    tail = window.subarray(Math.max(0, window.length - overlap));
    done += read;
  }
  return done;
}

function readOr(file, fallback) {
  try {
    return fs.readFileSync(file);
  } catch {
    return fallback;
  }
}

const sockets = new Set(['/run/sandbox/egress.sock', '/run/sandbox/agent.sock']);
let filesScanned = 0;

/** Every file under `dir` (not following symlinks); sockets are remembered to try later. */
function walk(dir, skip) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (skip.has(full) || entry.name === 'node_modules') continue;
    if (entry.isDirectory()) walk(full, skip);
    else if (entry.isSocket()) sockets.add(full);
    else if (entry.isFile() && !socketsOnly && scanFile(full, `file ${full}`)) filesScanned++;
  }
}

const processes = [];
for (const pid of fs.readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
  const comm = readOr(`/proc/${pid}/comm`, Buffer.from('?')).toString().trim();
  const environ = readOr(`/proc/${pid}/environ`, null);
  if (environ && !socketsOnly) search(environ, `environ ${pid} ${comm}`);
  const cmdline = readOr(`/proc/${pid}/cmdline`, null);
  if (cmdline && !socketsOnly) search(cmdline, `cmdline ${pid} ${comm}`);
  let fds = 0;
  try {
    for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
      fds++;
      if (!socketsOnly) scanFile(`/proc/${pid}/fd/${fd}`, `fd ${pid}/${fd} ${comm}`);
    }
  } catch {
    // not ours to list
  }
  let root = false;
  try {
    fs.readdirSync(`/proc/${pid}/root/`);
    root = true;
  } catch {
    // not ours to enter
  }
  for (const where of ['root', 'cwd']) sockets.add(`/proc/${pid}/${where}/run/sandbox/egress.sock`);
  if (root) for (const dir of ['run', 'state', 'tmp', 'workspace']) walk(`/proc/${pid}/root/${dir}`, new Set());
  const memBytes = socketsOnly ? 0 : scanMemory(pid);
  processes.push({ pid, comm, environ: environ !== null, fds, root, memBytes });
}

// The file system: everything but the virtual ones and what was installed before the agent started.
for (const root of (process.env.SCAN_ROOTS || '/').split(':')) walk(root, new Set(['/proc', '/sys', '/dev', '/usr']));

function tryConnect(socketPath) {
  return new Promise((resolve) => {
    const socket = net.connect(socketPath);
    const timer = setTimeout(() => {
      socket.destroy();
      resolve('timeout');
    }, 2000);
    socket.on('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve('connected');
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      resolve(error.code || 'error');
    });
  });
}

(async () => {
  const results = [];
  for (const socketPath of sockets) results.push({ path: socketPath, result: await tryConnect(socketPath) });
  process.stdout.write(JSON.stringify({ found, processes, sockets: results, filesScanned }));
})();
