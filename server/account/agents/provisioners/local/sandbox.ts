/**
 * The OS sandbox every local agent runs in (bubblewrap), and the resource limits around it.
 *
 * Why raw bwrap: its command line *is* the policy — an allow-list of what the agent sees, one
 * argument each, readable in one screen (`sandboxArgs` below). Nothing is visible unless named
 * here; a library that starts from the host's file system and subtracts is harder to audit.
 *
 * What the agent gets: its own user, pid, network, ipc, uts and cgroup namespaces; uid 1000 with
 * no capabilities; read-only /usr, the few /etc files a runtime needs (CA certificates, time
 * zones, passwd), the Node binary and the parts of this repository the agent runs from; its own
 * workspace read-write at /workspace, its store (agent.db) at /state; a private /tmp (whose
 * `exec` directory is exec's /tmp); its sockets at /run/sandbox. Not the data directory, other
 * workspaces, keys, /root, or the host's /proc. The network namespace has only its own loopback:
 * the agent's traffic leaves through the account's egress gateway socket.
 *
 * Memory, processes and CPU are bounded by a cgroup per agent (v1 controllers, or v2 where the
 * machine delegates them); when neither can be written the agent runs with rlimits only, and
 * the launcher says so in the log.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../../../common/build.js';

/** The part of the agent's /tmp that is exec's /tmp: commands keep their files between calls, and never see the agent's. */
export const EXEC_TMP = '/tmp/exec';

/**
 * The sandbox inside the sandbox that every `exec` command runs in: the agent's view of the
 * files, but no network at all (not even the egress gateway), its own pid namespace (it cannot
 * signal the agent), no view of the agent's sockets, its store or its /tmp.
 *
 * Its own **user namespace** is what keeps the agent's secrets out of reach. A nested sandbox may
 * not mount a new /proc, so a command sees the agent's processes; but every /proc/<pid> entry that
 * reveals a process (environ, mem, fd, root, cwd, maps) needs ptrace access, and the kernel grants
 * that across user namespaces only to a caller holding CAP_SYS_PTRACE in the target's namespace,
 * which a process in a child namespace never holds (commoncap's ptrace check, whatever the uid).
 * So `--unshare-user` is spelled out (`--unshare-all` alone only tries), and `probeSandbox` checks
 * at start that an exec sandbox cannot read its parent's entries. This stands in for making the
 * agent non-dumpable (prctl PR_SET_DUMPABLE, which Node cannot call), and also covers bwrap's own
 * process in the agent's sandbox, whose root is the agent's. The agent passes these to bwrap
 * itself (AGENT_EXEC_SANDBOX), so they are defined here, next to the outer policy.
 */
// A fresh /dev: device nodes bound in from a user namespace's bind of / cannot be opened.
export const EXEC_SANDBOX_ARGS = [
  '--unshare-all',
  '--unshare-user',
  '--die-with-parent',
  '--uid',
  '1000',
  '--gid',
  '1000',
  '--bind',
  '/',
  '/',
  '--dev',
  '/dev',
  '--tmpfs',
  '/run',
  // The agent's store (agent.db): never a command's to read or write.
  '--tmpfs',
  '/state',
  // The agent's own temporary files (a source-run agent's compiled modules among them) stay its own.
  '--bind',
  EXEC_TMP,
  '/tmp',
];

/**
 * AGENT_EXEC_NETWORK=allowlist: the same, but in the agent's network namespace, where the only way
 * out is the agent's relay to its egress gateway (EXEC_PROXY), which commands get as their proxy.
 */
export const EXEC_SANDBOX_ARGS_WITH_EGRESS = [...EXEC_SANDBOX_ARGS, '--share-net'];
export const EXEC_PROXY = 'http://127.0.0.1:3128';

const run = promisify(execFile);

/** Where the sandbox sees its own files. */
export const SANDBOX_WORKSPACE = '/workspace';
/** Where the agent keeps agent.db: beside the workspace, not in it (server/agent/store.ts). */
export const SANDBOX_STATE_DIR = '/state';
export const SANDBOX_RUN_DIR = '/run/sandbox';

/** The parts of the repository an agent runs from (sources for tsx, dist for the build). */
const PROJECT_PARTS = ['dist', 'contracts', 'server', 'rest-bridge', 'node_modules', 'prisma', 'package.json', 'tsconfig.json'];
/** Host /etc entries a runtime reads; nothing else of /etc is visible. */
const ETC_PARTS = ['ssl', 'ca-certificates', 'ca-certificates.conf', 'alternatives', 'localtime', 'timezone', 'passwd', 'group', 'nsswitch.conf', 'hosts'];

export interface SandboxMounts {
  workspace: string;
  /** Host directory holding agent.db, beside the workspace. */
  stateDir: string;
  /** Host directory holding the agent's and the gateway's sockets. */
  runDir: string;
}

/** bwrap arguments for one agent (the command follows `--`). */
export function sandboxArgs(mounts: SandboxMounts, opts: { tmpBytes: number }): string[] {
  const args = ['--unshare-all', '--die-with-parent', '--new-session', '--cap-drop', 'ALL', '--uid', '1000', '--gid', '1000', '--hostname', 'agent'];
  // The private /tmp first: mounted later it would hide whatever below is bound under /tmp (a
  // checkout there, as on CI machines).
  args.push('--size', String(opts.tmpBytes), '--tmpfs', '/tmp', '--perms', '0700', '--dir', EXEC_TMP);
  args.push('--ro-bind', '/usr', '/usr');
  // Merged-/usr systems link these into /usr; others have real directories.
  for (const dir of ['/bin', '/sbin', '/lib', '/lib32', '/lib64']) {
    if (!existsSync(dir)) continue;
    const target = readLinkOrNull(dir);
    if (target) args.push('--symlink', target, dir);
    else args.push('--ro-bind', dir, dir);
  }
  for (const entry of ETC_PARTS) {
    const source = path.join('/etc', entry);
    if (existsSync(source)) args.push('--ro-bind', source, source);
  }
  // A Node installed outside /usr (nvm, /opt, /usr/local is inside /usr already).
  const nodePrefix = path.dirname(path.dirname(process.execPath));
  if (!nodePrefix.startsWith('/usr/') && nodePrefix !== '/usr') args.push('--ro-bind', nodePrefix, nodePrefix);
  for (const part of PROJECT_PARTS) {
    const source = path.join(REPO_ROOT, part);
    if (existsSync(source)) args.push('--ro-bind', source, source);
  }
  args.push('--proc', '/proc', '--dev', '/dev');
  args.push('--bind', mounts.workspace, SANDBOX_WORKSPACE, '--bind', mounts.stateDir, SANDBOX_STATE_DIR, '--bind', mounts.runDir, SANDBOX_RUN_DIR);
  args.push('--chdir', SANDBOX_WORKSPACE, '--setenv', 'HOME', '/tmp', '--setenv', 'TMPDIR', '/tmp');
  return args;
}

function readLinkOrNull(file: string): string | null {
  return lstatSync(file).isSymbolicLink() ? readlinkSync(file) : null;
}

/** The probe's exec command exits with this when it could read its parent's /proc entries. */
const PARENT_READABLE = 97;

/**
 * Starts a trivial sandbox, and the exec sandbox inside it (server/agent/tools/exec.ts), once:
 * the only proof that this machine can run them. The exec command tries to read the environment
 * of the outer sandbox's first process, which stands where the agent stands: should it succeed,
 * commands could read their agent's memory, and there is no exec. `execSandbox` is the command
 * prefix exec runs under (the tests pass a weaker one to see the probe refuse it).
 */
export async function probeSandbox(
  bwrap: string,
  execSandbox: string[] = [bwrap, ...EXEC_SANDBOX_ARGS, '--'],
): Promise<{ ok: true } | { ok: false; reason: string }> {
  const system = ['/usr', '/bin', '/lib', '/lib64'].flatMap((dir) => (existsSync(dir) ? ['--ro-bind', dir, dir] : []));
  const readsParent = `if cat /proc/1/environ >/dev/null 2>&1; then exit ${PARENT_READABLE}; fi`;
  const inner = [...execSandbox, '/bin/sh', '-c', readsParent];
  try {
    await run(
      bwrap,
      ['--unshare-all', '--die-with-parent', ...system, '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--dir', EXEC_TMP, '--', ...inner],
      {
        timeout: 30_000,
      },
    );
    return { ok: true };
  } catch (error) {
    const failure = error as NodeJS.ErrnoException & { stderr?: string; code?: string | number };
    if (typeof failure.code === 'string') return { ok: false, reason: `${bwrap} cannot run (${failure.code})` };
    if (failure.code === PARENT_READABLE)
      return { ok: false, reason: "an exec sandbox can read its parent's /proc entries, so commands could read their agent's secrets" };
    return { ok: false, reason: `${bwrap} failed: ${(failure.stderr || failure.message).trim()}` };
  }
}

export interface ResourceLimits {
  memoryBytes: number;
  maxProcesses: number;
  /** Share of one CPU, in percent (100 = one core). */
  cpuPercent: number;
}

/** One agent's cgroups: the `cgroup.procs` files its wrapper joins, and how to remove them. */
export interface AgentCgroup {
  procsFiles: string[];
  remove(): void;
}

export type CgroupMode = 'v1' | 'v2' | 'none';

const CGROUP_ROOT = '/sys/fs/cgroup';
const GROUP = 'agent-sandbox';

/** Which cgroup interface this process may write, found once by trying. */
export function detectCgroups(): { mode: CgroupMode; reason?: string } {
  try {
    if (existsSync(path.join(CGROUP_ROOT, 'cgroup.controllers'))) {
      const parent = v2Parent();
      mkdirSync(parent, { recursive: true });
      writeFileSync(path.join(parent, 'cgroup.subtree_control'), '+memory +pids +cpu');
      return { mode: 'v2' };
    }
    for (const controller of ['memory', 'pids', 'cpu']) mkdirSync(path.join(CGROUP_ROOT, controller, GROUP), { recursive: true });
    return { mode: 'v1' };
  } catch (error) {
    return { mode: 'none', reason: (error as NodeJS.ErrnoException).code ?? (error as Error).message };
  }
}

/** cgroup v2: a sibling subtree of our own cgroup (a cgroup with processes cannot have controller children). */
function v2Parent(): string {
  const own =
    readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((line) => line.startsWith('0::'))
      ?.slice(3) ?? '/';
  return path.join(CGROUP_ROOT, path.dirname(own), GROUP);
}

export function createAgentCgroup(mode: CgroupMode, name: string, limits: ResourceLimits): AgentCgroup {
  if (mode === 'none') return { procsFiles: [], remove() {} };
  const period = 100_000;
  const quota = Math.round((period * limits.cpuPercent) / 100);
  const dirs: string[] = [];
  const write = (dir: string, file: string, value: string) => writeFileSync(path.join(dir, file), value);
  if (mode === 'v2') {
    const dir = path.join(v2Parent(), name);
    mkdirSync(dir, { recursive: true });
    dirs.push(dir);
    write(dir, 'memory.max', String(limits.memoryBytes));
    write(dir, 'memory.swap.max', '0');
    write(dir, 'pids.max', String(limits.maxProcesses));
    write(dir, 'cpu.max', `${quota} ${period}`);
  } else {
    const at = (controller: string) => {
      const dir = path.join(CGROUP_ROOT, controller, GROUP, name);
      mkdirSync(dir, { recursive: true });
      dirs.push(dir);
      return dir;
    };
    write(at('memory'), 'memory.limit_in_bytes', String(limits.memoryBytes));
    write(at('pids'), 'pids.max', String(limits.maxProcesses));
    const cpu = at('cpu');
    write(cpu, 'cpu.cfs_period_us', String(period));
    write(cpu, 'cpu.cfs_quota_us', String(quota));
  }
  return {
    procsFiles: dirs.map((dir) => path.join(dir, 'cgroup.procs')),
    remove() {
      // A cgroup goes once its last process has; a straggler keeps it until the next start.
      for (const dir of dirs) {
        try {
          rmdirSync(dir);
        } catch {
          // still busy or already gone
        }
      }
    },
  };
}

/** The file descriptor bwrap reads its options from (`--args`). */
export const SANDBOX_ARGS_FD = 3;

/**
 * The process to spawn for a sandboxed agent: a shell that moves itself into the agent's
 * cgroups and then becomes bwrap (so bwrap and all it starts are inside them from the first
 * instruction), with open files bounded by rlimit. bwrap reads its options from SANDBOX_ARGS_FD
 * (`sandboxArgsData`), not its command line: the sandbox's pid 1 is bwrap, and its command line
 * would show the agent the host paths of its mounts.
 */
export function sandboxedCommand(bwrap: string, cgroup: AgentCgroup, maxOpenFiles: number, command: string[]): { file: string; args: string[] } {
  const join = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 97; shift; done; shift; ulimit -n "$OPEN_FILES" || exit 97; exec "$@"';
  return {
    file: '/bin/sh',
    args: [
      '-c',
      join.replace('$OPEN_FILES', String(maxOpenFiles)),
      'agent-sandbox',
      ...cgroup.procsFiles,
      '--',
      bwrap,
      '--args',
      String(SANDBOX_ARGS_FD),
      '--',
      ...command,
    ],
  };
}

/** bwrap's options as `--args` reads them: each one NUL-terminated. */
export const sandboxArgsData = (args: string[]): string => args.map((arg) => `${arg}\0`).join('');
