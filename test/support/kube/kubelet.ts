/**
 * A test kubelet: plays the kubelet (and the volume provisioner) for ONE node of a control plane
 * started by cluster.ts, inside the kube suite's network namespace (scripts/kube/in-netns.sh).
 *
 * What it does, as a kubelet would:
 * - registers its Node (Ready, capacity/allocatable cpu, memory, pods; InternalIP 10.244.0.1; a
 *   podCIDR 10.244.X.0/24 of its own) and renews its Lease in kube-node-lease;
 * - watches Pods (one watch over all namespaces); binds Pending pods that have no nodeName to
 *   itself through the binding subresource (unless `bindPendingPods: false`, e.g. with the scheduler);
 * - as the volume provisioner: for each Pending PVC without a volume it creates a hostPath PV
 *   (a directory under its volume root) pre-bound to the claim (claimRef), which the controller
 *   manager's PV binder then binds; a Released PV it made is deleted with its directory;
 * - resolves pod volumes: persistentVolumeClaim → the bound PV's directory (waiting until bound),
 *   emptyDir → a fresh directory, secret / configMap → files (items and defaultMode honoured),
 *   hostPath → that path;
 * - runs each container's `command` + `args` ($(VAR) expanded as the kubelet does) with its env
 *   resolved (value, secretKeyRef, configMapKeyRef, fieldRef metadata.name / metadata.namespace /
 *   metadata.uid / spec.nodeName / spec.serviceAccountName / status.podIP / status.hostIP, envFrom)
 *   under bubblewrap: `--as-pid-1 --unshare-pid --unshare-ipc --unshare-uts --die-with-parent
 *   --share-net`, a read-only "image" (below), each volumeMount bound at its mountPath (readOnly
 *   honoured), fresh tmpfs /tmp and /run, a private /dev and /proc;
 * - gives each pod its own IP 10.244.X.n (local on the namespace's lo: the pod must bind that
 *   address, see below) and reports status: podIP, phase, containerStatuses (ready,
 *   restartCount, state, lastState), conditions (PodScheduled, Initialized, ContainersReady,
 *   Ready from the readiness probe: httpGet or tcpSocket on the pod IP; `holdReadiness` withholds it);
 * - restarts exited containers per restartPolicy with exponential backoff (1 s doubling up to
 *   10 s by default; reported as waiting/CrashLoopBackOff with lastState.terminated);
 * - honours deletion: on deletionTimestamp, SIGTERM to each container's process, up to
 *   deletionGracePeriodSeconds, SIGKILL, then deletes the pod with gracePeriodSeconds=0.
 *
 * The image: every container sees the host's root file system READ-ONLY (/usr, /etc, /opt,
 * /var, the bin/lib symlinks, and the top-level directories that hold this repository, its
 * node_modules and the node binary), and THIS REPOSITORY read-only both at its own path and at
 * /app. `workingDir` defaults to /app. A mountPath must be a new path at the top level (e.g.
 * /data), under /tmp, or an existing directory of the host (bubblewrap cannot create mount points
 * inside a read-only bind).
 *
 * Networking: pods share the node's network namespace (the netns of in-netns.sh): a pod IP is an
 * address of that namespace's lo. A pod must listen on its own pod IP (status.podIP through the
 * downward API), not on 0.0.0.0 (that would take the port on every pod IP) nor 127.0.0.1 (shared
 * by every pod and the test itself). There is no kube-proxy and no cluster DNS: ClusterIPs and
 * service names do not answer; reach pods at their IPs (Endpoints, pod status). Pods reach the
 * test's own servers on 127.0.0.1 or 10.244.0.1, and the API server at KUBERNETES_SERVICE_HOST/PORT
 * (its real address).
 *
 * NOT enforced (stored by the API server, asserted by tests, ignored here): securityContext
 * (runAsUser, readOnlyRootFilesystem, capabilities, seccomp, privilege escalation),
 * runtimeClassName, resource requests/limits, NetworkPolicy, service links (only
 * KUBERNETES_SERVICE_HOST/PORT are set, to the API server's real address), liveness and startup
 * probes, exec probes (treated as passing), lifecycle hooks, init containers (run in order before
 * the containers, each must exit 0), image pulls (the image is always this repository), container
 * logs through the API (read them with `logs()`). Probe timings are capped at `maxProbePeriodMs`
 * (1 s) so tests do not wait for production periods.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { lstatSync, readFileSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeApi, KubeApiError, type KubeObject, type KubeTarget, type KubeWatch, corePath } from './api.js';
import { KUBE_NODE_ADDRESS } from './netns.js';

export const REPO_ROOT = path.resolve(fileURLToPath(new URL('../../..', import.meta.url)));

export interface KubeletOptions {
  /** The control plane (cluster.ts's ControlPlane has these); the harness acts with the admin token. */
  cluster: { server: string; ca: string; adminToken: string };
  /** Default: harness-<random>. */
  nodeName?: string;
  /** Node capacity (default cpu 4, memory 8Gi, pods 110). */
  capacity?: { cpu?: string; memory?: string; pods?: string };
  /** Node labels (added to kubernetes.io/hostname, os and arch). */
  labels?: Record<string, string>;
  /**
   * Only these namespaces: their pods are bound to and run on this node, their claims provisioned.
   * Default: all. Test files sharing one control plane each run a kubelet over their own namespaces.
   */
  namespaces?: string[];
  /** Bind Pending pods with no nodeName to this node (default true; turn off when the scheduler runs). */
  bindPendingPods?: boolean;
  /** Provision hostPath PVs for Pending PVCs (default true; `storageClasses` limits it to those classes). */
  provisionVolumes?: boolean;
  storageClasses?: string[];
  /** Restart backoff: first delay and cap (default 1 s, 10 s). */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** Probe period / initial delay cap (default 1 s). */
  maxProbePeriodMs?: number;
  /** Lease renewal interval (default 10 s, as the kubelet). */
  leaseRenewMs?: number;
  /** The bwrap binary (default AGENT_SANDBOX_BWRAP, else bwrap). */
  bwrap?: string;
}

export interface PodProcessInfo {
  namespace: string;
  name: string;
  uid: string;
  ip: string;
  phase: string;
  ready: boolean;
  containers: Array<{ name: string; pid: number | undefined; running: boolean; restartCount: number; ready: boolean }>;
}

export interface TestKubelet {
  nodeName: string;
  /** This node's pod CIDR (10.244.X.0/24). */
  podCIDR: string;
  /** What runs on this node now. */
  pods(): PodProcessInfo[];
  /** One pod's process info, if it runs here. */
  pod(namespace: string, name: string): PodProcessInfo | undefined;
  /** Sends `signal` (default SIGKILL) to a container's process (default: the first container): a crash. */
  kill(namespace: string, name: string, opts?: { container?: string; signal?: NodeJS.Signals }): boolean;
  /** The tail of a container's stdout+stderr (across restarts). */
  logs(namespace: string, name: string, container?: string): string;
  /**
   * While held, readiness probes never make a container ready (a kubelet whose next probe is
   * still a period away): what takes requests then is found some other way, or not at all.
   */
  holdReadiness(hold: boolean): void;
  /** Harness errors seen so far (failed API calls, volumes that could not be resolved…). */
  errors(): string[];
  /** Stops watching and renewing, kills every pod process, removes its directories (PV data too unless keepVolumes). */
  stop(opts?: { keepVolumes?: boolean }): Promise<void>;
}

const LOG_TAIL = 32_768;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nowIso = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const microTime = () => new Date().toISOString().replace(/Z$/, '000Z');

/** The kubelet's $(VAR) expansion: defined names replaced, $$ escapes, unknown names kept. */
export function expandVars(input: string, vars: Record<string, string>): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    const ch = input[i];
    if (ch !== '$' || i + 1 >= input.length) {
      out += ch;
      continue;
    }
    const next = input[i + 1];
    if (next === '$') {
      out += '$';
      i++;
    } else if (next === '(') {
      const end = input.indexOf(')', i + 2);
      if (end < 0) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, end);
      out += Object.hasOwn(vars, name) ? vars[name] : `$(${name})`;
      i = end;
    } else {
      out += ch;
    }
  }
  return out;
}

/** A /24 of 10.244.0.0/16 for this kubelet, reserved across processes with an O_EXCL lock file. */
async function reservePodBlock(): Promise<{ third: number; release: () => Promise<void> }> {
  const lockDir = path.join(tmpdir(), 'kube-harness-pod-blocks');
  await mkdir(lockDir, { recursive: true });
  for (let attempt = 0; attempt < 300; attempt++) {
    const third = 1 + Math.floor(Math.random() * 254);
    const file = path.join(lockDir, String(third));
    try {
      const fh = await open(file, 'wx');
      await fh.writeFile(String(process.pid));
      await fh.close();
      return { third, release: () => rm(file, { force: true }) };
    } catch {
      // Taken: reclaim it when its process is gone.
      try {
        const pid = Number(readFileSync(file, 'utf8'));
        if (pid && pid !== process.pid) {
          try {
            process.kill(pid, 0);
          } catch {
            await rm(file, { force: true });
          }
        }
      } catch {
        // raced with its owner: try another block
      }
    }
  }
  throw new Error('no free 10.244.X.0/24 block for the test kubelet');
}

/** The read-only "image": bubblewrap arguments that show the host's system dirs and this repository. */
function imageArgs(): string[] {
  const args: string[] = [];
  const tops = new Set(['usr', 'etc', 'opt', 'var']);
  for (const p of [REPO_ROOT, safeRealpath(path.join(REPO_ROOT, 'node_modules')), safeRealpath(process.execPath)]) {
    const top = p?.split(path.sep)[1];
    if (top) tops.add(top);
  }
  for (const entry of readdirSync('/')) {
    const full = `/${entry}`;
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(full);
    } catch {
      continue;
    }
    if (st.isSymbolicLink() && ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'].includes(entry)) {
      args.push('--symlink', readlinkSync(full), full);
    } else if (st.isDirectory() && tops.has(entry)) {
      args.push('--ro-bind', full, full);
    }
  }
  args.push('--ro-bind', REPO_ROOT, '/app');
  return args;
}

/**
 * Where `mountPath` lands in the image: symlinks on the way are resolved as the host has them (e.g.
 * /var/run → /run), since bubblewrap cannot create a mount point through a symlink.
 */
function inImagePath(mountPath: string): string {
  const parts = path.resolve('/', mountPath).split('/').filter(Boolean);
  for (let i = parts.length; i > 0; i--) {
    const prefix = `/${parts.slice(0, i).join('/')}`;
    const real = safeRealpath(prefix);
    if (real !== undefined) return path.join(real, ...parts.slice(i));
  }
  return path.resolve('/', mountPath);
}

function safeRealpath(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
}

interface ContainerRuntime {
  name: string;
  spec: KubeObject;
  proc?: ChildProcess;
  pid?: number;
  running: boolean;
  exited?: Promise<void>;
  startedAt?: string;
  restartCount: number;
  lastTerminated?: KubeObject;
  waiting?: { reason: string; message?: string };
  terminated?: KubeObject;
  ready: boolean;
  probeOk: number;
  probeFail: number;
  probeTimer?: NodeJS.Timeout;
  backoffTimer?: NodeJS.Timeout;
  /** An init container's: it runs once (`Never`), whatever the pod's restartPolicy. */
  restartPolicy?: 'Never';
  backoffMs: number;
  logs: string;
}

interface PodRuntime {
  uid: string;
  namespace: string;
  name: string;
  ip: string;
  pod: KubeObject;
  startTime: string;
  phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
  containers: ContainerRuntime[];
  mounts: Map<string, { dir: string; readOnly: boolean }>;
  scratch: string;
  env?: Map<string, Record<string, string>>;
  terminating: boolean;
  gone: boolean;
  statusDirty: boolean;
  statusWriting: boolean;
  message?: string;
}

export async function startKubelet(opts: KubeletOptions): Promise<TestKubelet> {
  const target: KubeTarget = { server: opts.cluster.server, ca: opts.cluster.ca, token: opts.cluster.adminToken };
  const api = new KubeApi(target);
  const nodeName = opts.nodeName ?? `harness-${randomBytes(3).toString('hex')}`;
  const bwrap = opts.bwrap ?? process.env.AGENT_SANDBOX_BWRAP ?? 'bwrap';
  const backoffInitial = opts.backoffInitialMs ?? 1_000;
  const backoffMax = opts.backoffMaxMs ?? 10_000;
  const maxProbe = opts.maxProbePeriodMs ?? 1_000;
  const apiUrl = new URL(opts.cluster.server);
  const block = await reservePodBlock();
  const podCIDR = `10.244.${block.third}.0/24`;
  const root = await mkdtemp(path.join(tmpdir(), `kubelet-${nodeName}-`));
  const volumeRoot = path.join(root, 'volumes');
  const podsRoot = path.join(root, 'pods');
  await mkdir(volumeRoot);
  await mkdir(podsRoot);
  const image = imageArgs();

  const errors: string[] = [];
  const report = (what: string, err: unknown) => {
    if (stopped) return;
    const msg = `${what}: ${err instanceof Error ? err.message : String(err)}`;
    errors.push(msg);
    if (errors.length > 200) errors.shift();
  };

  const pods = new Map<string, PodRuntime>();
  const usedIps = new Set<number>();
  const pvcs = new Map<string, KubeObject>();
  const pvs = new Map<string, KubeObject>();
  const changes = new EventEmitter();
  changes.setMaxListeners(0);
  let stopped = false;
  let readinessHeld = false;
  const watches: KubeWatch[] = [];
  const timers = new Set<NodeJS.Timeout>();

  const allocateIp = (): string => {
    for (let n = 2; n < 255; n++) {
      if (!usedIps.has(n)) {
        usedIps.add(n);
        return `10.244.${block.third}.${n}`;
      }
    }
    throw new Error(`no free pod IP in ${podCIDR}`);
  };
  const releaseIp = (ip: string) => usedIps.delete(Number(ip.split('.')[3]));

  // ---- the Node and its Lease
  const capacity = { cpu: opts.capacity?.cpu ?? '4', memory: opts.capacity?.memory ?? '8Gi', pods: opts.capacity?.pods ?? '110', 'ephemeral-storage': '50Gi' };
  const nodeStatus = () => {
    const t = nowIso();
    const cond = (type: string, status: string, reason: string) => ({ type, status, reason, message: reason, lastHeartbeatTime: t, lastTransitionTime: t });
    return {
      capacity,
      allocatable: capacity,
      conditions: [
        cond('MemoryPressure', 'False', 'KubeletHasSufficientMemory'),
        cond('DiskPressure', 'False', 'KubeletHasNoDiskPressure'),
        cond('PIDPressure', 'False', 'KubeletHasSufficientPID'),
        cond('Ready', 'True', 'KubeletReady'),
      ],
      addresses: [
        { type: 'InternalIP', address: KUBE_NODE_ADDRESS },
        { type: 'Hostname', address: nodeName },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: '',
        systemUUID: '',
        bootID: '',
        kernelVersion: '',
        osImage: 'agent-accounts test kubelet',
        containerRuntimeVersion: 'bwrap://0.8',
        kubeletVersion: 'v1.20.2',
        kubeProxyVersion: 'v1.20.2',
        operatingSystem: 'linux',
        architecture: 'amd64',
      },
    };
  };
  const nodeBody = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: nodeName,
      labels: { 'kubernetes.io/hostname': nodeName, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', ...(opts.labels ?? {}) },
    },
    spec: { podCIDR, podCIDRs: [podCIDR] },
    status: nodeStatus(),
  };
  let node: KubeObject;
  try {
    node = await api.post('/api/v1/nodes', nodeBody);
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 409)) throw err;
    node = await api.get(`/api/v1/nodes/${nodeName}`);
  }
  await api.patch(`/api/v1/nodes/${nodeName}/status`, { status: nodeStatus() });
  const leasePath = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${nodeName}`;
  try {
    await api.post('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: nodeName, ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: node.metadata.uid }] },
      spec: { holderIdentity: nodeName, leaseDurationSeconds: 40, renewTime: microTime() },
    });
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 409)) throw err;
    await api.patch(leasePath, { spec: { holderIdentity: nodeName, renewTime: microTime() } });
  }
  const leaseTimer = setInterval(() => {
    api.patch(leasePath, { spec: { renewTime: microTime() } }).catch((err) => report('renew lease', err));
  }, opts.leaseRenewMs ?? 10_000);
  timers.add(leaseTimer);

  // ---- status reporting (one write in flight per pod; the latest state wins)
  const containerStatus = (c: ContainerRuntime) => {
    let state: KubeObject;
    if (c.running) state = { running: { startedAt: c.startedAt } };
    else if (c.terminated) state = { terminated: c.terminated };
    else state = { waiting: c.waiting ?? { reason: 'ContainerCreating' } };
    return {
      name: c.name,
      ready: c.ready,
      started: c.running,
      restartCount: c.restartCount,
      image: c.spec.image ?? '',
      imageID: '',
      ...(c.pid ? { containerID: `bwrap://${c.pid}` } : {}),
      state,
      lastState: c.lastTerminated ? { terminated: c.lastTerminated } : {},
    };
  };
  const podStatus = (p: PodRuntime) => {
    const ready = p.phase === 'Running' && p.containers.every((c) => c.ready);
    const t = nowIso();
    const cond = (type: string, ok: boolean, reason?: string) => ({
      type,
      status: ok ? 'True' : 'False',
      lastProbeTime: null,
      lastTransitionTime: t,
      ...(ok || !reason ? {} : { reason }),
    });
    return {
      phase: p.phase,
      hostIP: KUBE_NODE_ADDRESS,
      podIP: p.ip,
      podIPs: [{ ip: p.ip }],
      startTime: p.startTime,
      ...(p.message ? { message: p.message } : {}),
      conditions: [
        cond('Initialized', true),
        cond('Ready', ready, 'ContainersNotReady'),
        cond('ContainersReady', ready, 'ContainersNotReady'),
        cond('PodScheduled', true),
      ],
      containerStatuses: p.containers.map(containerStatus),
    };
  };
  const lastReady = new Map<string, boolean>();
  const markDirty = (p: PodRuntime) => {
    p.statusDirty = true;
    if (p.statusWriting) return;
    p.statusWriting = true;
    void (async () => {
      while (p.statusDirty && !p.gone && !stopped) {
        p.statusDirty = false;
        const status = podStatus(p);
        // Keep lastTransitionTime stable unless readiness really changed.
        const key = p.uid;
        const readyNow = status.conditions[1]!.status === 'True';
        if (lastReady.get(key) === readyNow) {
          const prev = p.pod.status?.conditions as KubeObject[] | undefined;
          for (const c of status.conditions) {
            const old = prev?.find((x) => x.type === c.type && x.status === c.status);
            if (old?.lastTransitionTime) c.lastTransitionTime = old.lastTransitionTime;
          }
        }
        lastReady.set(key, readyNow);
        try {
          const updated = await api.patch(corePath(p.namespace, 'pods', p.name, 'status'), {
            metadata: { uid: p.uid },
            status,
          });
          if (updated?.metadata?.uid === p.uid) p.pod = updated;
        } catch (err) {
          if (err instanceof KubeApiError && (err.status === 404 || err.status === 409)) break;
          report(`status of ${p.namespace}/${p.name}`, err);
          await sleep(200);
          p.statusDirty = true;
        }
      }
      p.statusWriting = false;
    })();
  };

  // ---- volumes
  const waitChange = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        changes.off('change', done);
        resolve();
      }
      changes.on('change', done);
    });

  const claimDir = async (p: PodRuntime, claimName: string): Promise<string> => {
    for (;;) {
      if (p.terminating || p.gone || stopped) throw new Error('pod is going away');
      const pvc = pvcs.get(`${p.namespace}/${claimName}`);
      const volumeName = pvc?.spec?.volumeName as string | undefined;
      if (pvc && pvc.status?.phase === 'Bound' && volumeName) {
        const pv = pvs.get(volumeName) ?? (await api.getOrUndefined(`/api/v1/persistentvolumes/${volumeName}`));
        const dir = pv?.spec?.hostPath?.path ?? pv?.spec?.local?.path;
        if (!dir) throw new Error(`PV ${volumeName} has no hostPath/local path (the test kubelet mounts only those)`);
        await mkdir(dir, { recursive: true });
        return dir;
      }
      p.message = `waiting for PVC ${claimName} to be bound`;
      await waitChange(2_000);
    }
  };

  const writeKeys = async (dir: string, data: Record<string, Buffer>, items: KubeObject[] | undefined, defaultMode: number | undefined) => {
    await mkdir(dir, { recursive: true });
    const entries: Array<[string, Buffer, number | undefined]> = items?.length
      ? items.filter((i) => data[i.key]).map((i) => [i.path as string, data[i.key]!, i.mode as number | undefined])
      : Object.entries(data).map(([k, v]) => [k, v, undefined]);
    for (const [rel, value, mode] of entries) {
      const file = path.join(dir, rel);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, value);
      await chmod(file, mode ?? defaultMode ?? 0o644);
    }
  };

  const secretData = async (namespace: string, name: string): Promise<Record<string, Buffer> | undefined> => {
    const s = await api.getOrUndefined(corePath(namespace, 'secrets', name));
    if (!s) return undefined;
    return Object.fromEntries(Object.entries((s.data ?? {}) as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
  };
  const configMapData = async (namespace: string, name: string): Promise<Record<string, Buffer> | undefined> => {
    const c = await api.getOrUndefined(corePath(namespace, 'configmaps', name));
    if (!c) return undefined;
    return {
      ...Object.fromEntries(Object.entries((c.data ?? {}) as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'utf8')])),
      ...Object.fromEntries(Object.entries((c.binaryData ?? {}) as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
    };
  };

  const resolveVolumes = async (p: PodRuntime) => {
    for (const v of (p.pod.spec.volumes ?? []) as KubeObject[]) {
      let dir: string;
      let readOnly = false;
      if (v.persistentVolumeClaim) {
        dir = await claimDir(p, v.persistentVolumeClaim.claimName);
        readOnly = v.persistentVolumeClaim.readOnly === true;
      } else if (v.emptyDir) {
        dir = path.join(p.scratch, 'empty', v.name);
        await mkdir(dir, { recursive: true });
      } else if (v.hostPath) {
        dir = v.hostPath.path;
        if (v.hostPath.type === 'DirectoryOrCreate') await mkdir(dir, { recursive: true });
      } else if (v.secret) {
        const data = await secretData(p.namespace, v.secret.secretName);
        if (!data && !v.secret.optional) throw new Error(`secret ${v.secret.secretName} not found`);
        dir = path.join(p.scratch, 'secret', v.name);
        await writeKeys(dir, data ?? {}, v.secret.items, v.secret.defaultMode);
        readOnly = true;
      } else if (v.configMap) {
        const data = await configMapData(p.namespace, v.configMap.name);
        if (!data && !v.configMap.optional) throw new Error(`configMap ${v.configMap.name} not found`);
        dir = path.join(p.scratch, 'configmap', v.name);
        await writeKeys(dir, data ?? {}, v.configMap.items, v.configMap.defaultMode);
        readOnly = true;
      } else {
        throw new Error(`volume ${v.name}: its type is not supported by the test kubelet (${Object.keys(v).join(', ')})`);
      }
      p.mounts.set(v.name, { dir, readOnly });
    }
  };

  // ---- env
  const fieldValue = (p: PodRuntime, fieldPath: string): string => {
    switch (fieldPath) {
      case 'metadata.name':
        return p.name;
      case 'metadata.namespace':
        return p.namespace;
      case 'metadata.uid':
        return p.uid;
      case 'spec.nodeName':
        return nodeName;
      case 'spec.serviceAccountName':
        return p.pod.spec.serviceAccountName ?? 'default';
      case 'status.podIP':
        return p.ip;
      case 'status.hostIP':
        return KUBE_NODE_ADDRESS;
      default: {
        const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
        if (m) return p.pod.metadata?.[m[1]!]?.[m[2]!] ?? '';
        throw new Error(`fieldRef ${fieldPath} is not supported by the test kubelet`);
      }
    }
  };

  const resolveEnv = async (p: PodRuntime, c: KubeObject): Promise<Record<string, string>> => {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOSTNAME: p.name,
      HOME: '/tmp',
      KUBERNETES_SERVICE_HOST: apiUrl.hostname,
      KUBERNETES_SERVICE_PORT: apiUrl.port,
    };
    const cache = new Map<string, Record<string, Buffer> | undefined>();
    const source = async (kind: 'secret' | 'configmap', name: string) => {
      const key = `${kind}/${name}`;
      if (!cache.has(key)) cache.set(key, kind === 'secret' ? await secretData(p.namespace, name) : await configMapData(p.namespace, name));
      return cache.get(key);
    };
    for (const from of (c.envFrom ?? []) as KubeObject[]) {
      const ref = from.secretRef ?? from.configMapRef;
      const data = await source(from.secretRef ? 'secret' : 'configmap', ref.name);
      if (!data && !ref.optional) throw new Error(`envFrom ${ref.name} not found`);
      for (const [k, v] of Object.entries(data ?? {})) env[`${from.prefix ?? ''}${k}`] = v.toString('utf8');
    }
    for (const e of (c.env ?? []) as KubeObject[]) {
      if (e.valueFrom) {
        const vf = e.valueFrom;
        const ref = vf.secretKeyRef ?? vf.configMapKeyRef;
        if (ref) {
          const data = await source(vf.secretKeyRef ? 'secret' : 'configmap', ref.name);
          const value = data?.[ref.key];
          if (value === undefined) {
            if (ref.optional) continue;
            throw new Error(`env ${e.name}: key ${ref.key} of ${ref.name} not found`);
          }
          env[e.name] = value.toString('utf8');
        } else if (vf.fieldRef) {
          env[e.name] = fieldValue(p, vf.fieldRef.fieldPath);
        } else {
          throw new Error(`env ${e.name}: valueFrom ${Object.keys(vf).join(', ')} is not supported by the test kubelet`);
        }
      } else {
        env[e.name] = expandVars(e.value ?? '', env);
      }
    }
    return env;
  };

  // ---- containers
  const portOf = (c: ContainerRuntime, port: number | string): number => {
    if (typeof port === 'number') return port;
    if (/^\d+$/.test(port)) return Number(port);
    const named = ((c.spec.ports ?? []) as KubeObject[]).find((x) => x.name === port);
    if (!named) throw new Error(`probe port ${port} is not a named port of ${c.name}`);
    return named.containerPort;
  };

  const probeOnce = (p: PodRuntime, c: ContainerRuntime, probe: KubeObject): Promise<boolean> => {
    const timeoutMs = Math.max(200, Math.min((probe.timeoutSeconds ?? 1) * 1000, 5_000));
    if (probe.httpGet) {
      return new Promise((resolve) => {
        const req = httpRequest(
          {
            host: p.ip,
            port: portOf(c, probe.httpGet.port),
            path: probe.httpGet.path ?? '/',
            method: 'GET',
            timeout: timeoutMs,
            headers: Object.fromEntries(((probe.httpGet.httpHeaders ?? []) as KubeObject[]).map((h) => [h.name, h.value])),
            agent: false,
          },
          (res) => {
            res.resume();
            resolve((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 400);
          },
        );
        req.on('timeout', () => req.destroy());
        req.on('error', () => resolve(false));
        req.end();
      });
    }
    if (probe.tcpSocket) {
      return new Promise((resolve) => {
        const sock = connect({ host: p.ip, port: portOf(c, probe.tcpSocket.port), timeout: timeoutMs });
        sock.once('connect', () => {
          sock.destroy();
          resolve(true);
        });
        sock.once('timeout', () => {
          sock.destroy();
          resolve(false);
        });
        sock.once('error', () => resolve(false));
      });
    }
    return Promise.resolve(true); // exec probes: not supported, treated as passing
  };

  const startProbing = (p: PodRuntime, c: ContainerRuntime) => {
    const probe = c.spec.readinessProbe as KubeObject | undefined;
    if (!probe) {
      c.ready = true;
      markDirty(p);
      return;
    }
    const period = Math.min((probe.periodSeconds ?? 10) * 1000, maxProbe);
    const initial = Math.min((probe.initialDelaySeconds ?? 0) * 1000, maxProbe);
    const successNeeded = probe.successThreshold ?? 1;
    const failureNeeded = probe.failureThreshold ?? 3;
    const tick = async () => {
      c.probeTimer = undefined;
      if (!c.running || p.terminating || stopped) return;
      const ok = await probeOnce(p, c, probe).catch(() => false);
      if (!c.running || p.terminating || stopped) return;
      if (ok) {
        c.probeOk++;
        c.probeFail = 0;
        if (!c.ready && c.probeOk >= successNeeded && !readinessHeld) {
          c.ready = true;
          markDirty(p);
        }
      } else {
        c.probeFail++;
        c.probeOk = 0;
        // Not yet ready: one failure keeps it not ready; once ready, failureThreshold in a row.
        if (c.ready && c.probeFail >= failureNeeded) {
          c.ready = false;
          markDirty(p);
        }
      }
      // Until first ready, probe at least every 100 ms so a start is reported promptly.
      c.probeTimer = setTimeout(tick, c.ready ? period : Math.min(period, 100));
    };
    c.probeTimer = setTimeout(tick, initial);
  };

  const launch = (p: PodRuntime, c: ContainerRuntime) => {
    const env = p.env?.get(c.name) ?? {};
    const command = ((c.spec.command ?? []) as string[]).map((a) => expandVars(a, env));
    const args = ((c.spec.args ?? []) as string[]).map((a) => expandVars(a, env));
    const argv = [...command, ...args];
    if (argv.length === 0) {
      c.waiting = { reason: 'CreateContainerError', message: 'no command: the test kubelet has no image entrypoint' };
      markDirty(p);
      return;
    }
    const bw: string[] = [
      ...image,
      '--dev',
      '/dev',
      '--proc',
      '/proc',
      '--tmpfs',
      '/tmp',
      '--tmpfs',
      '/run',
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--hostname',
      p.name.slice(0, 63),
      '--share-net',
      '--die-with-parent',
      '--as-pid-1',
      '--info-fd',
      '3',
    ];
    for (const m of (c.spec.volumeMounts ?? []) as KubeObject[]) {
      const vol = p.mounts.get(m.name);
      if (!vol) {
        c.waiting = { reason: 'CreateContainerConfigError', message: `volumeMount ${m.name}: no such volume` };
        markDirty(p);
        return;
      }
      const src = m.subPath ? path.join(vol.dir, m.subPath) : vol.dir;
      bw.push(m.readOnly || vol.readOnly ? '--ro-bind' : '--bind', src, inImagePath(m.mountPath));
    }
    bw.push('--chdir', c.spec.workingDir ?? '/app', '--clearenv');
    for (const [k, v] of Object.entries(env)) bw.push('--setenv', k, v);
    bw.push('--', ...argv);

    c.waiting = undefined;
    c.terminated = undefined;
    c.pid = undefined;
    c.probeOk = 0;
    c.probeFail = 0;
    c.ready = false;
    const startedMs = Date.now();
    const proc = spawn(bwrap, bw, { stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
    c.proc = proc;
    c.running = true;
    c.startedAt = nowIso();
    const keep = (chunk: Buffer) => {
      c.logs = (c.logs + chunk.toString('utf8')).slice(-LOG_TAIL);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    let info = '';
    (proc.stdio[3] as NodeJS.ReadableStream | null)?.on('data', (chunk: Buffer) => {
      info += chunk.toString('utf8');
      const m = /"child-pid"\s*:\s*(\d+)/.exec(info);
      if (m && c.proc === proc) {
        c.pid = Number(m[1]);
        markDirty(p);
      }
    });
    c.exited = new Promise((resolve) => {
      let done = false;
      const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
        if (done) return;
        done = true;
        if (c.proc === proc) onContainerExit(p, c, code, signal, startedMs);
        resolve();
      };
      proc.once('exit', onExit);
      proc.once('error', (err) => {
        keep(Buffer.from(`\nspawn ${bwrap} failed: ${err.message}\n`));
        onExit(127, null);
      });
    });
    markDirty(p);
    startProbing(p, c);
  };

  const onContainerExit = (p: PodRuntime, c: ContainerRuntime, code: number | null, signal: NodeJS.Signals | null, startedMs: number) => {
    if (c.probeTimer) clearTimeout(c.probeTimer);
    c.probeTimer = undefined;
    c.running = false;
    c.ready = false;
    // bwrap exits with 128+N when its command died of signal N (as a container runtime reports it).
    const exitCode = code ?? 128 + (signal === 'SIGKILL' ? 9 : 15);
    const terminated = {
      exitCode,
      reason: exitCode === 0 ? 'Completed' : 'Error',
      startedAt: c.startedAt,
      finishedAt: nowIso(),
      ...(c.pid ? { containerID: `bwrap://${c.pid}` } : {}),
    };
    c.pid = undefined;
    c.proc = undefined;
    if (p.terminating || p.gone || stopped) {
      c.terminated = terminated;
      return;
    }
    const policy = (c.restartPolicy ?? p.pod.spec.restartPolicy ?? 'Always') as string;
    if (policy === 'Never' || (policy === 'OnFailure' && exitCode === 0)) {
      c.terminated = terminated;
      if (p.containers.every((x) => !x.running && x.terminated)) {
        p.phase = p.containers.every((x) => x.terminated?.exitCode === 0) ? 'Succeeded' : 'Failed';
      }
      markDirty(p);
      return;
    }
    // Restart with backoff; a container that ran long enough starts over from the first delay.
    if (Date.now() - startedMs > backoffMax * 6) c.backoffMs = 0;
    c.backoffMs = c.backoffMs ? Math.min(c.backoffMs * 2, backoffMax) : backoffInitial;
    c.lastTerminated = terminated;
    c.restartCount++;
    c.waiting = { reason: 'CrashLoopBackOff', message: `back-off ${c.backoffMs} ms restarting failed container ${c.name}` };
    markDirty(p);
    c.backoffTimer = setTimeout(() => {
      c.backoffTimer = undefined;
      if (!p.terminating && !p.gone && !stopped) launch(p, c);
    }, c.backoffMs);
  };

  const runInitContainers = async (p: PodRuntime) => {
    for (const spec of (p.pod.spec.initContainers ?? []) as KubeObject[]) {
      for (let attempt = 0; ; attempt++) {
        if (p.terminating || p.gone || stopped) throw new Error('pod is going away');
        // Run once, then look at its exit. The policy is the container's own: `p.pod` is replaced
        // by every status write's answer, so a pod spec changed for the run could be the API's
        // again when the command exits (then a finished init container was taken for a crashed
        // one and restarted with backoff: wakes of 20–60 s on a loaded machine).
        const c: ContainerRuntime = { ...newContainer(spec), restartPolicy: 'Never' };
        p.env?.set(spec.name, await resolveEnv(p, spec));
        const saved = p.containers;
        p.containers = [c];
        launch(p, c);
        await c.exited;
        p.containers = saved;
        if (c.terminated?.exitCode === 0) break;
        if (p.pod.spec.restartPolicy === 'Never') throw new Error(`init container ${spec.name} failed (exit ${c.terminated?.exitCode})`);
        await sleep(Math.min(backoffInitial * 2 ** attempt, backoffMax));
      }
    }
  };

  const newContainer = (spec: KubeObject): ContainerRuntime => ({
    name: spec.name,
    spec,
    running: false,
    restartCount: 0,
    ready: false,
    probeOk: 0,
    probeFail: 0,
    backoffMs: 0,
    logs: '',
  });

  const startPod = async (pod: KubeObject) => {
    const uid = pod.metadata.uid as string;
    const p: PodRuntime = {
      uid,
      namespace: pod.metadata.namespace,
      name: pod.metadata.name,
      ip: allocateIp(),
      pod,
      startTime: nowIso(),
      phase: 'Pending',
      containers: ((pod.spec.containers ?? []) as KubeObject[]).map(newContainer),
      mounts: new Map(),
      scratch: path.join(podsRoot, uid),
      env: new Map(),
      terminating: false,
      gone: false,
      statusDirty: false,
      statusWriting: false,
    };
    pods.set(uid, p);
    try {
      await mkdir(p.scratch, { recursive: true });
      markDirty(p);
      await resolveVolumes(p);
      p.message = undefined;
      await runInitContainers(p);
      for (const c of p.containers) p.env?.set(c.name, await resolveEnv(p, c.spec));
      if (p.terminating || p.gone || stopped) return;
      p.phase = 'Running';
      for (const c of p.containers) launch(p, c);
    } catch (err) {
      if (p.terminating || p.gone || stopped) return;
      report(`start ${p.namespace}/${p.name}`, err);
      p.message = err instanceof Error ? err.message : String(err);
      for (const c of p.containers) c.waiting = { reason: 'CreateContainerConfigError', message: p.message };
      markDirty(p);
    }
  };

  const killContainer = async (c: ContainerRuntime, graceMs: number) => {
    if (c.backoffTimer) clearTimeout(c.backoffTimer);
    c.backoffTimer = undefined;
    if (c.probeTimer) clearTimeout(c.probeTimer);
    c.probeTimer = undefined;
    const proc = c.proc;
    if (!proc || !c.running) return;
    const signal = (sig: NodeJS.Signals) => {
      try {
        if (c.pid) process.kill(c.pid, sig);
        else proc.kill(sig);
      } catch {
        // already gone
      }
    };
    if (graceMs > 0) {
      signal('SIGTERM');
      const timer = new Promise<void>((r) => setTimeout(r, graceMs).unref());
      await Promise.race([c.exited, timer]);
    }
    if (c.running) {
      signal('SIGKILL');
      proc.kill('SIGKILL');
      await c.exited;
    }
  };

  const cleanupPod = async (p: PodRuntime) => {
    p.gone = true;
    pods.delete(p.uid);
    lastReady.delete(p.uid);
    releaseIp(p.ip);
    await rm(p.scratch, { recursive: true, force: true }).catch(() => undefined);
  };

  const terminatePod = async (p: PodRuntime) => {
    if (p.terminating) return;
    p.terminating = true;
    const graceSeconds = (p.pod.metadata.deletionGracePeriodSeconds ?? p.pod.spec.terminationGracePeriodSeconds ?? 30) as number;
    await Promise.all(p.containers.map((c) => killContainer(c, graceSeconds * 1000)));
    await cleanupPod(p);
    try {
      await api.delete(`${corePath(p.namespace, 'pods', p.name)}`, {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        gracePeriodSeconds: 0,
        preconditions: { uid: p.uid },
      });
    } catch (err) {
      if (!(err instanceof KubeApiError && (err.status === 404 || err.status === 409))) report(`delete ${p.namespace}/${p.name}`, err);
    }
  };

  const binding = new Set<string>();
  const bindPod = async (pod: KubeObject) => {
    const uid = pod.metadata.uid as string;
    if (binding.has(uid)) return;
    binding.add(uid);
    try {
      await api.post(corePath(pod.metadata.namespace, 'pods', pod.metadata.name, 'binding'), {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: pod.metadata.name, uid },
        target: { apiVersion: 'v1', kind: 'Node', name: nodeName },
      });
    } catch (err) {
      if (!(err instanceof KubeApiError && (err.status === 409 || err.status === 404))) report(`bind ${pod.metadata.namespace}/${pod.metadata.name}`, err);
    } finally {
      binding.delete(uid);
    }
  };

  const inScope = (o: KubeObject) => !opts.namespaces || opts.namespaces.includes(o.metadata?.namespace);

  const onPod = (type: string, pod: KubeObject) => {
    if (stopped || !inScope(pod)) return;
    const uid = pod.metadata.uid as string;
    const mine = pod.spec?.nodeName === nodeName;
    const running = pods.get(uid);
    if (type === 'DELETED') {
      binding.delete(uid);
      if (running && !running.terminating) {
        // Force-deleted (or deleted before we saw the graceful deletion): kill now.
        running.terminating = true;
        void Promise.all(running.containers.map((c) => killContainer(c, 0))).then(() => cleanupPod(running));
      }
      return;
    }
    if (running) {
      running.pod = { ...pod, spec: running.pod.spec };
      if (pod.metadata.deletionTimestamp) terminatePod(running).catch((err) => report(`terminate ${running.namespace}/${running.name}`, err));
      return;
    }
    if (!pod.spec?.nodeName) {
      if (opts.bindPendingPods !== false && !pod.metadata.deletionTimestamp) void bindPod(pod);
      return;
    }
    if (!mine) return;
    if (pod.metadata.deletionTimestamp) {
      // Never started here (or we restarted): finish the deletion.
      api
        .delete(corePath(pod.metadata.namespace, 'pods', pod.metadata.name), {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          gracePeriodSeconds: 0,
          preconditions: { uid },
        })
        .catch((err) => {
          if (!(err instanceof KubeApiError && (err.status === 404 || err.status === 409)))
            report(`delete ${pod.metadata.namespace}/${pod.metadata.name}`, err);
        });
      return;
    }
    if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return;
    startPod(pod).catch((err) => report(`start ${pod.metadata.namespace}/${pod.metadata.name}`, err));
  };

  // ---- the volume provisioner
  const provisioning = new Set<string>();
  const provision = async (pvc: KubeObject) => {
    const uid = pvc.metadata.uid as string;
    if (provisioning.has(uid)) return;
    const className = (pvc.spec.storageClassName ?? '') as string;
    if (opts.storageClasses && !opts.storageClasses.includes(className)) return;
    provisioning.add(uid);
    const name = `pvc-${uid}`;
    const dir = path.join(volumeRoot, name);
    try {
      await mkdir(dir, { recursive: true });
      await api.post('/api/v1/persistentvolumes', {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: {
          name,
          labels: { 'kube-harness/node': nodeName },
          annotations: { 'pv.kubernetes.io/provisioned-by': 'kube-harness' },
        },
        spec: {
          capacity: { storage: pvc.spec.resources?.requests?.storage ?? '1Gi' },
          accessModes: pvc.spec.accessModes ?? ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName: className,
          volumeMode: pvc.spec.volumeMode ?? 'Filesystem',
          hostPath: { path: dir, type: 'DirectoryOrCreate' },
          claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: pvc.metadata.namespace, name: pvc.metadata.name, uid },
        },
      });
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 409)) {
        provisioning.delete(uid);
        report(`provision a PV for ${pvc.metadata.namespace}/${pvc.metadata.name}`, err);
      }
    }
  };
  const onPvc = (type: string, pvc: KubeObject) => {
    const key = `${pvc.metadata.namespace}/${pvc.metadata.name}`;
    if (type === 'DELETED') pvcs.delete(key);
    else pvcs.set(key, pvc);
    changes.emit('change');
    if (opts.provisionVolumes === false || type === 'DELETED' || !inScope(pvc)) return;
    if (!pvc.spec.volumeName && pvc.status?.phase !== 'Bound' && !pvc.metadata.deletionTimestamp) void provision(pvc);
  };
  const onPv = (type: string, pv: KubeObject) => {
    if (type === 'DELETED') pvs.delete(pv.metadata.name);
    else pvs.set(pv.metadata.name, pv);
    changes.emit('change');
    const ours = pv.metadata.labels?.['kube-harness/node'] === nodeName;
    if (ours && type !== 'DELETED' && pv.status?.phase === 'Released' && !pv.metadata.deletionTimestamp) {
      const dir = pv.spec.hostPath?.path as string | undefined;
      api
        .delete(`/api/v1/persistentvolumes/${pv.metadata.name}`)
        .then(() => (dir?.startsWith(volumeRoot) ? rm(dir, { recursive: true, force: true }) : undefined))
        .catch((err) => {
          if (!(err instanceof KubeApiError && err.status === 404)) report(`delete released PV ${pv.metadata.name}`, err);
        });
    }
  };

  watches.push(
    api.watchList(
      '/api/v1/persistentvolumes',
      (e) => onPv(e.type, e.object),
      (err) => report('watch PVs', err),
    ),
  );
  watches.push(
    api.watchList(
      '/api/v1/persistentvolumeclaims',
      (e) => onPvc(e.type, e.object),
      (err) => report('watch PVCs', err),
    ),
  );
  watches.push(
    api.watchList(
      '/api/v1/pods',
      (e) => onPod(e.type, e.object),
      (err) => report('watch pods', err),
    ),
  );

  const info = (p: PodRuntime): PodProcessInfo => ({
    namespace: p.namespace,
    name: p.name,
    uid: p.uid,
    ip: p.ip,
    phase: p.phase,
    ready: p.phase === 'Running' && p.containers.every((c) => c.ready),
    containers: p.containers.map((c) => ({ name: c.name, pid: c.pid, running: c.running, restartCount: c.restartCount, ready: c.ready })),
  });
  const find = (namespace: string, name: string) => [...pods.values()].find((p) => p.namespace === namespace && p.name === name && !p.gone);

  let stopping: Promise<void> | undefined;
  return {
    nodeName,
    podCIDR,
    pods: () => [...pods.values()].filter((p) => !p.gone).map(info),
    pod: (namespace, name) => {
      const p = find(namespace, name);
      return p ? info(p) : undefined;
    },
    kill(namespace, name, killOpts = {}) {
      const p = find(namespace, name);
      const c = killOpts.container ? p?.containers.find((x) => x.name === killOpts.container) : p?.containers[0];
      if (!c?.running || !c.pid) return false;
      try {
        process.kill(c.pid, killOpts.signal ?? 'SIGKILL');
        return true;
      } catch {
        return false;
      }
    },
    holdReadiness(hold) {
      readinessHeld = hold;
    },
    logs(namespace, name, container) {
      const p = find(namespace, name);
      const c = container ? p?.containers.find((x) => x.name === container) : p?.containers[0];
      return c?.logs ?? '';
    },
    errors: () => [...errors],
    stop(stopOpts = {}) {
      stopping ??= (async () => {
        stopped = true;
        for (const w of watches) w.stop();
        for (const t of timers) clearInterval(t);
        for (const p of pods.values()) p.terminating = true;
        await Promise.all([...pods.values()].flatMap((p) => p.containers.map((c) => killContainer(c, 0))));
        api.close();
        await rm(stopOpts.keepVolumes ? podsRoot : root, { recursive: true, force: true });
        await block.release();
      })();
      return stopping;
    },
  };
}

/** Waits (bounded) until `check` returns a value other than undefined/false; polls every 100 ms. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as T;
    } catch (err) {
      last = err;
    }
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    await sleep(100);
  }
}
