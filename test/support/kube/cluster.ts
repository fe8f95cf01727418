/**
 * A real Kubernetes control plane for tests: etcd + kube-apiserver + kube-controller-manager
 * (+ kube-scheduler when asked) v1.20.2 as child processes of the test, in the current network
 * namespace. Run it inside scripts/kube/in-netns.sh: the API server listens on 10.244.0.1 (Endpoints
 * refuse loopback addresses), an address that exists only on that namespace's own `lo`.
 *
 * - Binaries: `opts.binDir`, else KUBE_BIN_DIR, else ~/.cache/agent-accounts/kube/v1.20.2, as
 *   scripts/kube/ensure-control-plane.sh leaves them (npm run test:kube runs it first).
 * - TLS: a fresh self-signed CA (EC P-256) signs the serving certificate (IP SANs 10.244.0.1,
 *   10.96.0.1, 127.0.0.1 and the kubernetes.default.svc names); `ca` is that CA's PEM.
 * - Authentication: static tokens (--token-auth-file): an admin in group system:masters, and the
 *   controller manager and scheduler as their RBAC bootstrap users (the controller manager also in
 *   system:masters unless `serviceAccountCredentials`). Authorization: Node,RBAC.
 * - Service-account tokens are signed with a fresh EC key; `tokenFor()` creates a token Secret
 *   (Kubernetes 1.20: the token controller fills it) and returns the token.
 * - Ports: random free ports (two runs never collide); data in a temp dir (etcd's under /dev/shm
 *   when it exists: no fsync cost on a loaded disk), removed by stop().
 * Prints nothing when all goes well; a component that fails or does not become ready in time
 * fails startControlPlane with the tail of its stderr.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { KubeApi, KubeApiError, corePath } from './api.js';
import { KUBE_NODE_ADDRESS } from './netns.js';

const run = promisify(execFile);

export interface ControlPlaneOptions {
  /** Where kube-apiserver & co. are (default: KUBE_BIN_DIR, else ~/.cache/agent-accounts/kube/v1.20.2). */
  binDir?: string;
  /** The etcd binary (default: KUBE_ETCD, else `etcd` on PATH). */
  etcd?: string;
  /** The address the API server binds and advertises (default 10.244.0.1). */
  address?: string;
  /** Start kube-controller-manager (default true: StatefulSets, Endpoints, PV binding, GC, SA tokens). */
  controllerManager?: boolean;
  /** Its --controllers (default '*,-nodeipam'). */
  controllers?: string;
  /**
   * Run each controller with its own service-account credentials (--use-service-account-credentials),
   * as production does. Default false: the controller manager then acts as itself, in group
   * system:masters, and is ready about 3 s sooner (no token per controller to mint first).
   */
  serviceAccountCredentials?: boolean;
  /** Start kube-scheduler (default false: the test kubelet binds pending pods to its node itself). */
  scheduler?: boolean;
  /** Extra kube-apiserver flags (e.g. ['--enable-admission-plugins=…']). */
  apiserverArgs?: string[];
  /** Extra kube-controller-manager flags. */
  controllerManagerArgs?: string[];
  /** How long the whole start may take before it fails (default 90 s: generous for a loaded machine). */
  timeoutMs?: number;
}

/** What a test process needs to reach a control plane another process started (vitest's globalSetup). */
export interface ControlPlaneInfo {
  server: string;
  ca: string;
  adminToken: string;
  kubeconfigPath: string;
  dir: string;
}

export interface ControlPlane {
  /** https://10.244.0.1:<port> */
  server: string;
  /** The cluster CA (PEM). */
  ca: string;
  /** A static token of user `admin` in group system:masters. */
  adminToken: string;
  /** A kubeconfig file for the admin (CA embedded), e.g. for `kubectl --kubeconfig` or KubeConfig.loadFromFile. */
  kubeconfigPath: string;
  /** The temp dir holding certificates, tokens, kubeconfigs and the components' data. */
  dir: string;
  /** The plain-data part, for connectControlPlane() in another process. */
  info: ControlPlaneInfo;
  /** An admin client (test/support/kube/api.ts). */
  api: KubeApi;
  /**
   * A token of ServiceAccount `serviceAccount` in `namespace` (created when missing): a
   * kubernetes.io/service-account-token Secret that the token controller fills.
   */
  tokenFor(namespace: string, serviceAccount: string): Promise<string>;
  /** Writes a kubeconfig that authenticates with `token` (e.g. a service account's) and returns its path. */
  writeKubeconfig(token: string, name?: string): Promise<string>;
  /** How long each start phase took (ms): certs, etcd, apiserver, controllerManager, scheduler, total. */
  startupMs: Record<string, number>;
  /** The tail of a component's stderr ('etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'). */
  logs(component: string): string;
  /** Stops every component (SIGTERM, then SIGKILL after 5 s) and removes the temp dir (connectControlPlane's: only closes its client). */
  stop(): Promise<void>;
}

/** A ControlPlane handle on one started elsewhere (e.g. by test/support/kube/global-setup.ts). */
export function connectControlPlane(info: ControlPlaneInfo): ControlPlane {
  const api = new KubeApi({ server: info.server, ca: info.ca, token: info.adminToken });
  return {
    ...info,
    info,
    api,
    tokenFor: (namespace, serviceAccount) => serviceAccountToken(api, namespace, serviceAccount),
    writeKubeconfig: (token, name) => writeKubeconfigFile(info, token, name),
    startupMs: {},
    logs: () => '',
    async stop() {
      api.close();
    },
  };
}

async function writeKubeconfigFile(info: ControlPlaneInfo, token: string, name = `user-${randomBytes(4).toString('hex')}`): Promise<string> {
  const file = path.join(info.dir, `${name}-${randomBytes(3).toString('hex')}.kubeconfig`);
  await writeFile(file, kubeconfigYaml(info.server, info.ca, token, name), { mode: 0o600 });
  return file;
}

const DEFAULT_BIN_DIR = path.join(homedir(), '.cache', 'agent-accounts', 'kube', 'v1.20.2');
const SERVICE_CIDR = '10.96.0.0/16';
const STDERR_TAIL = 16_384;

export function kubeBinDir(): string {
  return process.env.KUBE_BIN_DIR ?? DEFAULT_BIN_DIR;
}

function freePortOn(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** setpriv --pdeathsig: a component dies with the test process even if stop() never runs. */
let setprivPath: string | null | undefined;
function pdeathsigPrefix(): string[] {
  if (setprivPath === undefined) setprivPath = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p)) ?? null;
  return setprivPath ? [setprivPath, '--pdeathsig', 'KILL', '--'] : [];
}

class Component {
  readonly proc: ChildProcess;
  private tail = '';
  exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly exitedPromise: Promise<void>;

  constructor(
    readonly name: string,
    command: string,
    args: string[],
  ) {
    const prefix = pdeathsigPrefix();
    const argv = [...prefix, command, ...args];
    this.proc = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (chunk: Buffer) => {
      this.tail = (this.tail + chunk.toString('utf8')).slice(-STDERR_TAIL);
    };
    this.proc.stdout?.on('data', keep);
    this.proc.stderr?.on('data', keep);
    this.exitedPromise = new Promise((resolve) => {
      this.proc.once('exit', (code, signal) => {
        this.exited = { code, signal };
        resolve();
      });
      this.proc.once('error', (err) => {
        this.tail += `\nspawn failed: ${err.message}`;
        this.exited ??= { code: null, signal: null };
        resolve();
      });
    });
  }

  logs(): string {
    return this.tail;
  }

  describeFailure(what: string): Error {
    const status = this.exited ? ` (exited: code ${this.exited.code}, signal ${this.exited.signal})` : '';
    return new Error(`${this.name}: ${what}${status}\n--- ${this.name} stderr (tail) ---\n${this.tail.slice(-4_000)}`);
  }

  async stop(graceMs = 5_000): Promise<void> {
    if (this.exited) return;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    await this.exitedPromise;
    clearTimeout(timer);
  }
}

async function makeCerts(dir: string, address: string): Promise<{ ca: string }> {
  const ext = path.join(dir, 'serving.ext');
  await writeFile(
    ext,
    [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      'extendedKeyUsage=serverAuth',
      `subjectAltName=IP:${address},IP:10.96.0.1,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost`,
      '',
    ].join('\n'),
  );
  const f = (name: string) => path.join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.crt'),
    '-subj',
    '/CN=agent-accounts-test-ca',
    '-days',
    '3',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
  ]);
  await run('openssl', ['req', ...ec, '-keyout', f('apiserver.key'), '-out', f('apiserver.csr'), '-subj', '/CN=kube-apiserver']);
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    f('apiserver.csr'),
    '-CA',
    f('ca.crt'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('apiserver.crt'),
    '-days',
    '3',
    '-extfile',
    ext,
  ]);
  // The service-account signing key (ES256).
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  await writeFile(f('sa.key'), privateKey.export({ type: 'sec1', format: 'pem' }) as string, { mode: 0o600 });
  await writeFile(f('sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }) as string);
  return { ca: await readFile(f('ca.crt'), 'utf8') };
}

function kubeconfigYaml(server: string, ca: string, token: string, user: string): string {
  const caData = Buffer.from(ca).toString('base64');
  return `apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: ${server}
    certificate-authority-data: ${caData}
users:
- name: ${user}
  user:
    token: ${token}
contexts:
- name: ${user}@test
  context:
    cluster: test
    user: ${user}
current-context: ${user}@test
`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const started = Date.now();
  const deadline = started + (opts.timeoutMs ?? 90_000);
  const address = opts.address ?? KUBE_NODE_ADDRESS;
  const binDir = opts.binDir ?? kubeBinDir();
  for (const bin of [
    'kube-apiserver',
    ...(opts.controllerManager === false ? [] : ['kube-controller-manager']),
    ...(opts.scheduler ? ['kube-scheduler'] : []),
  ]) {
    if (!existsSync(path.join(binDir, bin))) {
      throw new Error(`${bin} not found in ${binDir}: run \`bash scripts/kube/ensure-control-plane.sh\` (or set KUBE_BIN_DIR)`);
    }
  }
  const etcdBin = opts.etcd ?? process.env.KUBE_ETCD ?? 'etcd';

  const dir = await mkdtemp(path.join(tmpdir(), 'kube-cp-'));
  const etcdDir = existsSync('/dev/shm') ? await mkdtemp(path.join('/dev/shm', 'kube-etcd-')) : path.join(dir, 'etcd');
  const components: Component[] = [];
  let api: KubeApi | undefined;
  const stopAll = async () => {
    api?.close();
    for (const c of [...components].reverse()) await c.stop();
    await rm(dir, { recursive: true, force: true });
    await rm(etcdDir, { recursive: true, force: true });
  };
  const onExit = () => {
    for (const c of components) if (!c.exited) c.proc.kill('SIGKILL');
  };
  process.once('exit', onExit);

  const startupMs: Record<string, number> = {};
  let mark = started;
  const phase = (name: string) => {
    const now = Date.now();
    startupMs[name] = now - mark;
    mark = now;
  };
  try {
    const { ca } = await makeCerts(dir, address);
    phase('certs');
    const f = (name: string) => path.join(dir, name);
    const adminToken = randomBytes(24).toString('hex');
    const cmToken = randomBytes(24).toString('hex');
    const schedToken = randomBytes(24).toString('hex');
    await writeFile(
      f('tokens.csv'),
      [
        `${adminToken},admin,admin-uid,"system:masters"`,
        opts.serviceAccountCredentials
          ? `${cmToken},system:kube-controller-manager,kcm-uid`
          : `${cmToken},system:kube-controller-manager,kcm-uid,"system:masters"`,
        `${schedToken},system:kube-scheduler,sched-uid`,
        '',
      ].join('\n'),
      { mode: 0o600 },
    );

    // etcd on loopback (only the API server talks to it).
    const [etcdClient, etcdPeer, apiPort] = await Promise.all([freePortOn('127.0.0.1'), freePortOn('127.0.0.1'), freePortOn(address)]);
    const etcdUrl = `http://127.0.0.1:${etcdClient}`;
    const etcd = new Component('etcd', etcdBin, [
      '--name=test',
      `--data-dir=${etcdDir}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=test=http://127.0.0.1:${etcdPeer}`,
      '--logger=zap',
      '--log-level=warn',
      '--snapshot-count=10000',
    ]);
    components.push(etcd);
    await waitFor(etcd, 'did not answer /health', deadline, async () => {
      const res = await fetch(`${etcdUrl}/health`, { signal: AbortSignal.timeout(1_000) });
      return res.ok;
    });
    phase('etcd');

    const server = `https://${address}:${apiPort}`;
    const apiserver = new Component('kube-apiserver', path.join(binDir, 'kube-apiserver'), [
      `--etcd-servers=${etcdUrl}`,
      `--bind-address=${address}`,
      `--advertise-address=${address}`,
      `--secure-port=${apiPort}`,
      '--insecure-port=0',
      `--cert-dir=${f('apiserver-certs')}`,
      `--tls-cert-file=${f('apiserver.crt')}`,
      `--tls-private-key-file=${f('apiserver.key')}`,
      `--client-ca-file=${f('ca.crt')}`,
      `--token-auth-file=${f('tokens.csv')}`,
      '--authorization-mode=Node,RBAC',
      `--service-account-key-file=${f('sa.pub')}`,
      `--service-account-signing-key-file=${f('sa.key')}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      '--api-audiences=https://kubernetes.default.svc.cluster.local',
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      '--allow-privileged=false',
      '--profiling=false',
      '--event-ttl=10m',
      '--v=0',
      ...(opts.apiserverArgs ?? []),
    ]);
    components.push(apiserver);
    api = new KubeApi({ server, ca, token: adminToken });
    const admin = api;
    await waitFor(apiserver, 'did not become ready (/readyz)', deadline, async () => {
      try {
        return (await admin.requestText('GET', '/readyz', undefined, { timeoutMs: 2_000 })).trim() === 'ok';
      } catch {
        return false;
      }
    });
    phase('apiserver');

    const kubeconfigPath = f('admin.kubeconfig');
    await writeFile(kubeconfigPath, kubeconfigYaml(server, ca, adminToken, 'admin'), { mode: 0o600 });

    if (opts.controllerManager !== false) {
      await writeFile(f('controller-manager.kubeconfig'), kubeconfigYaml(server, ca, cmToken, 'system:kube-controller-manager'), { mode: 0o600 });
      const cm = new Component('kube-controller-manager', path.join(binDir, 'kube-controller-manager'), [
        `--kubeconfig=${f('controller-manager.kubeconfig')}`,
        `--authentication-kubeconfig=${f('controller-manager.kubeconfig')}`,
        `--authorization-kubeconfig=${f('controller-manager.kubeconfig')}`,
        '--leader-elect=false',
        `--use-service-account-credentials=${opts.serviceAccountCredentials === true}`,
        `--controllers=${opts.controllers ?? '*,-nodeipam'}`,
        `--service-account-private-key-file=${f('sa.key')}`,
        `--root-ca-file=${f('ca.crt')}`,
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        '--port=0',
        '--secure-port=0',
        '--pvclaimbinder-sync-period=2s',
        '--profiling=false',
        '--v=0',
        ...(opts.controllerManagerArgs ?? []),
      ]);
      components.push(cm);
      // Ready when the service-account controller has made `default` in the default namespace
      // (every pod needs its namespace's `default` ServiceAccount to pass admission).
      await waitFor(cm, 'did not create the default ServiceAccount', deadline, async () => {
        return (await admin.getOrUndefined(corePath('default', 'serviceaccounts', 'default'))) !== undefined;
      });
      phase('controllerManager');
    }

    if (opts.scheduler) {
      await writeFile(f('scheduler.kubeconfig'), kubeconfigYaml(server, ca, schedToken, 'system:kube-scheduler'), { mode: 0o600 });
      const sched = new Component('kube-scheduler', path.join(binDir, 'kube-scheduler'), [
        `--kubeconfig=${f('scheduler.kubeconfig')}`,
        `--authentication-kubeconfig=${f('scheduler.kubeconfig')}`,
        `--authorization-kubeconfig=${f('scheduler.kubeconfig')}`,
        '--leader-elect=false',
        '--port=0',
        '--secure-port=0',
        '--v=0',
      ]);
      components.push(sched);
      // No cheap readiness signal: at least make sure it did not exit straight away.
      await sleep(300);
      if (sched.exited) throw sched.describeFailure('exited at start');
      phase('scheduler');
    }
    startupMs.total = Date.now() - started;

    const byName = (name: string) => components.find((c) => c.name === name);
    let stopping: Promise<void> | undefined;
    const info: ControlPlaneInfo = { server, ca, adminToken, kubeconfigPath, dir };
    return {
      ...info,
      info,
      api: admin,
      tokenFor: (namespace, serviceAccount) => serviceAccountToken(admin, namespace, serviceAccount),
      writeKubeconfig: (token, name) => writeKubeconfigFile(info, token, name),
      startupMs,
      logs: (name) => byName(name)?.logs() ?? '',
      stop() {
        process.removeListener('exit', onExit);
        stopping ??= stopAll();
        return stopping;
      },
    };
  } catch (err) {
    process.removeListener('exit', onExit);
    await stopAll().catch(() => undefined);
    throw err;
  }
}

/** Polls `ready` (every 100 ms, each try bounded by the caller) until true, the component exits, or the deadline. */
async function waitFor(component: Component, what: string, deadline: number, ready: () => Promise<boolean>): Promise<void> {
  for (;;) {
    if (component.exited) throw component.describeFailure(`exited before it was ready`);
    if (await ready().catch(() => false)) return;
    if (Date.now() > deadline) throw component.describeFailure(what);
    await sleep(100);
  }
}

async function serviceAccountToken(api: KubeApi, namespace: string, serviceAccount: string): Promise<string> {
  try {
    await api.post(corePath(namespace, 'serviceaccounts'), { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: serviceAccount } });
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 409)) throw err;
  }
  const secret = await api.post(corePath(namespace, 'secrets'), {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/service-account-token',
    metadata: { generateName: `${serviceAccount}-token-`, annotations: { 'kubernetes.io/service-account.name': serviceAccount } },
  });
  const name = secret.metadata.name as string;
  const until = Date.now() + 30_000;
  for (;;) {
    const current = await api.getOrUndefined(corePath(namespace, 'secrets', name));
    const token = current?.data?.token as string | undefined;
    if (token) return Buffer.from(token, 'base64').toString('utf8');
    if (Date.now() > until) throw new Error(`the token controller did not fill secret ${namespace}/${name} in 30 s (is kube-controller-manager running?)`);
    await sleep(100);
  }
}
