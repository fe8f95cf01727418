/**
 * The Kubernetes objects of one user's agent, as plain data: what the provisioner applies, and
 * what deploy/kubernetes/'s Role, NetworkPolicies and docs describe. All are named `agent-<agent
 * id>` (the agent id is a UUID, so every derived name stays a DNS label) and carry the labels
 * below, which is how the provisioner lists, watches and reconciles them and how the
 * NetworkPolicies select agent pods.
 *
 * - a Secret: `secrets.json`, the agent's secret settings (its bearer secret, its egress token,
 *   its bot's token), mounted read-only and read once at start (AGENT_SECRETS_FILE): never in
 *   the environment;
 * - a PersistentVolumeClaim: the workspace and agent.db, which outlive every Pod;
 * - a headless Service: a stable DNS name for operators (the account service routes by the
 *   Pod's IP from its watch, not by DNS);
 * - a StatefulSet of 0 or 1 replicas. Chosen over a Pod the provisioner owns: the controller
 *   keeps at most one Pod per ordinal whichever account instance asks (two instances waking one
 *   agent make one Pod), restarts a crashed container with the kubelet's backoff, and suspending
 *   is one field (replicas 0: Pod gone, PVC kept).
 *
 * The Pod has two containers of the same image and user: `agent`, and `exec`, the exec runner
 * (server/agent/tools/exec-runner.ts) where every `exec` command runs. The runner's container has
 * its own process namespace (no process of the agent in its /proc), the workspace but not the
 * Secret or the state directory, its own /tmp and no secret in its environment: what a command
 * runs next to holds nothing of the agent's (docs/security.md, "exec in a Pod cannot read its
 * agent"). Every container meets the `restricted` Pod Security profile.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { V1PersistentVolumeClaim, V1Secret, V1Service, V1StatefulSet } from '@kubernetes/client-node';

/** The agent container's port (named `http`). */
export const AGENT_POD_PORT = 8080;
/** Where the PVC is mounted: the workspace and the agent's state directory below it. */
const DATA_DIR = '/data';
const WORKSPACE_DIR = `${DATA_DIR}/workspace`;
const SECRETS_DIR = '/var/run/agent';
/** The exec runner's socket, in a volume of its own that both containers mount. */
const EXEC_SOCKET_DIR = '/run/exec';
/** A non-root uid of the agent image (deploy/docker/agent.Dockerfile). */
export const AGENT_UID = 10001;

export const LABEL = {
  name: 'app.kubernetes.io/name',
  partOf: 'app.kubernetes.io/part-of',
  managedBy: 'app.kubernetes.io/managed-by',
  agentId: 'agent-accounts.dev/agent-id',
  userId: 'agent-accounts.dev/user-id',
} as const;

/** When the agent was last used, by any account instance (written at most a few times per idle period). */
export const LAST_USED_ANNOTATION = 'agent-accounts.dev/last-used';
/** Every object of every agent this service manages. */
export const AGENT_SELECTOR = `${LABEL.partOf}=agent-accounts,${LABEL.name}=agent`;
export const FIELD_MANAGER = 'agent-accounts';

export const objectName = (agentId: string) => `agent-${agentId}`;
export const podName = (agentId: string) => `${objectName(agentId)}-0`;

/**
 * The agent's credential at the egress gateway's TCP address: its id and an HMAC of it under the
 * agent's own secret, so any account instance can check it from the registry alone.
 */
export function egressToken(agentId: string, agentSecret: string): string {
  return `${agentId}.${createHmac('sha256', agentSecret).update(`egress:${agentId}`).digest('base64url')}`;
}

/**
 * Who presents `token` at the egress gateway: the agent its id names, when the HMAC matches that
 * agent's secret (constant-time) and the agent belongs to a user; otherwise nobody.
 */
export function egressTokenChecker(
  agentById: (id: string) => Promise<{ id: string; secret: string; userId: string | null } | undefined>,
): (token: string) => Promise<{ agentId: string; userId: string } | undefined> {
  return async (token) => {
    const agentId = token.split('.')[0] ?? '';
    const agent = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(agentId) ? await agentById(agentId) : undefined;
    if (!agent?.userId) return undefined;
    const expected = Buffer.from(egressToken(agent.id, agent.secret));
    const given = Buffer.from(token);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    return { agentId: agent.id, userId: agent.userId };
  };
}

/** What every agent Pod gets, from the account service's configuration (KUBE_*, AGENT_*). */
export interface AgentPodSettings {
  namespace: string;
  image: string;
  /** KUBE_RUNTIME_CLASS: gVisor (`gvisor`) or Kata in production; unset: the cluster's default. */
  runtimeClass?: string;
  /** KUBE_STORAGE_CLASS; unset: the cluster's default class. */
  storageClass?: string;
  /** KUBE_WORKSPACE_SIZE, e.g. `1Gi`. */
  workspaceSize: string;
  /** KUBE_EGRESS_URL: the egress gateway as pods reach it. */
  egressUrl: string;
  memoryMb: number;
  /** Percent of one core. */
  cpuPercent: number;
  tmpMb: number;
  /** AGENT_STOP_GRACE: the Pod's grace period is this and a margin, so a suspend never cuts a reply short of it. */
  stopGraceSeconds: number;
  /** Settings every agent gets (model, runtime); never a secret. */
  env: Record<string, string>;
  /** The container's command and working directory; unset: the image's (the test harness maps the image to this repository). */
  command?: string[];
  workingDir?: string;
}

export interface AgentIdentity {
  id: string;
  userId: string;
}

function metadata(agent: AgentIdentity, namespace: string, name = objectName(agent.id)) {
  return {
    name,
    namespace,
    labels: {
      [LABEL.name]: 'agent',
      [LABEL.partOf]: 'agent-accounts',
      [LABEL.managedBy]: 'agent-accounts-account',
      [LABEL.agentId]: agent.id,
      [LABEL.userId]: agent.userId,
    },
  };
}

export function agentSecret(agent: AgentIdentity, namespace: string, secrets: Record<string, string>): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: metadata(agent, namespace),
    type: 'Opaque',
    data: { 'secrets.json': Buffer.from(JSON.stringify(secrets)).toString('base64') },
  };
}

export function agentVolumeClaim(agent: AgentIdentity, settings: AgentPodSettings): V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: metadata(agent, settings.namespace, `${objectName(agent.id)}-workspace`),
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: settings.workspaceSize } },
      ...(settings.storageClass ? { storageClassName: settings.storageClass } : {}),
    },
  };
}

export function agentService(agent: AgentIdentity, namespace: string): V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: metadata(agent, namespace),
    spec: {
      clusterIP: 'None',
      selector: { [LABEL.agentId]: agent.id },
      ports: [{ name: 'http', port: AGENT_POD_PORT, targetPort: 'http' }],
    },
  };
}

/** Every container of an agent's Pod: what the `restricted` Pod Security profile asks, and a read-only root. */
const CONTAINER_SECURITY = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  privileged: false,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
};

/**
 * The StatefulSet with `replicas` (0: suspended, 1: running); `env` adds this start's settings (a
 * heartbeat due, a quota); `usedAt`, the last use it carries as it is scaled up (LAST_USED_ANNOTATION).
 */
export function agentStatefulSet(
  agent: AgentIdentity,
  settings: AgentPodSettings,
  replicas: 0 | 1,
  env: Record<string, string> = {},
  usedAt?: Date,
): V1StatefulSet {
  const meta = { ...metadata(agent, settings.namespace), ...(usedAt ? { annotations: { [LAST_USED_ANNOTATION]: usedAt.toISOString() } } : {}) };
  const name = objectName(agent.id);
  const environment: Record<string, string> = {
    ...settings.env,
    ...env,
    HOST: '$(POD_IP)',
    AGENT_PORT: String(AGENT_POD_PORT),
    AGENT_NAME: name,
    AGENT_WORKSPACE: WORKSPACE_DIR,
    AGENT_STATE_DIR: `${DATA_DIR}/state`,
    AGENT_SECRETS_FILE: `${SECRETS_DIR}/secrets.json`,
    AGENT_EXEC_RUNNER: `${EXEC_SOCKET_DIR}/exec.sock`,
    AGENT_EGRESS_URL: settings.egressUrl,
    AGENT_STOP_GRACE: String(settings.stopGraceSeconds),
  };
  const image = {
    image: settings.image,
    ...(settings.command ? { command: settings.command } : {}),
    ...(settings.workingDir ? { workingDir: settings.workingDir } : {}),
  };
  const resources = {
    limits: { memory: `${settings.memoryMb}Mi`, cpu: `${settings.cpuPercent * 10}m` },
    requests: { memory: `${Math.min(settings.memoryMb, 128)}Mi`, cpu: '50m' },
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: meta,
    spec: {
      replicas,
      serviceName: name,
      podManagementPolicy: 'Parallel',
      selector: { matchLabels: { [LABEL.agentId]: agent.id } },
      template: {
        metadata: { labels: meta.labels },
        spec: {
          ...(settings.runtimeClass ? { runtimeClassName: settings.runtimeClass } : {}),
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          // A suspend lets running replies finish (the agent's SIGTERM handling), then a margin.
          terminationGracePeriodSeconds: Math.ceil(settings.stopGraceSeconds) + 5,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: AGENT_UID,
            runAsGroup: AGENT_UID,
            fsGroup: AGENT_UID,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          // The workspace exists before either container mounts it (the runner mounts it alone).
          initContainers: [
            {
              name: 'prepare',
              image: settings.image,
              command: ['mkdir', '-p', WORKSPACE_DIR, `${DATA_DIR}/state`],
              securityContext: CONTAINER_SECURITY,
              resources,
              volumeMounts: [{ name: 'data', mountPath: DATA_DIR }],
            },
          ],
          containers: [
            {
              name: 'agent',
              ...image,
              ports: [{ name: 'http', containerPort: AGENT_POD_PORT }],
              env: [
                // First: the others may refer to it ($(POD_IP)).
                { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
                ...Object.entries(environment).map(([envName, value]) => ({ name: envName, value })),
              ],
              // The shortest period Kubernetes allows: a woken agent takes traffic within a second of answering.
              readinessProbe: { httpGet: { path: '/health', port: 'http' }, periodSeconds: 1, failureThreshold: 3, timeoutSeconds: 2 },
              securityContext: CONTAINER_SECURITY,
              resources,
              volumeMounts: [
                { name: 'data', mountPath: DATA_DIR },
                { name: 'secrets', mountPath: SECRETS_DIR, readOnly: true },
                { name: 'tmp', mountPath: '/tmp' },
                { name: 'exec-socket', mountPath: EXEC_SOCKET_DIR },
              ],
            },
            {
              // Commands get limits of their own: they cannot starve the agent's memory, nor it theirs.
              name: 'exec',
              ...image,
              env: [{ name: 'AGENT_EXEC_RUNNER_LISTEN', value: `${EXEC_SOCKET_DIR}/exec.sock` }],
              securityContext: CONTAINER_SECURITY,
              resources,
              volumeMounts: [
                { name: 'data', mountPath: WORKSPACE_DIR, subPath: 'workspace' },
                { name: 'exec-tmp', mountPath: '/tmp' },
                { name: 'exec-socket', mountPath: EXEC_SOCKET_DIR },
              ],
            },
          ],
          volumes: [
            { name: 'data', persistentVolumeClaim: { claimName: `${name}-workspace` } },
            { name: 'secrets', secret: { secretName: name, defaultMode: 0o440 } },
            { name: 'tmp', emptyDir: { sizeLimit: `${settings.tmpMb}Mi` } },
            { name: 'exec-tmp', emptyDir: { sizeLimit: `${settings.tmpMb}Mi` } },
            { name: 'exec-socket', emptyDir: { sizeLimit: '1Mi' } },
          ],
        },
      },
    },
  };
}
