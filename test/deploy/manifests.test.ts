/**
 * deploy/kubernetes/ as kustomize renders it (`kubectl kustomize`), read object by object: the
 * provisioner's Role is least privilege, the NetworkPolicies admit exactly the traffic the design
 * allows (evaluated with NetworkPolicy's own rules over a matrix of sources and destinations), the
 * account Deployment runs locked down and wired to what the base defines, every apiVersion is one
 * a v1.20 API server serves, and no Secret value is rendered or committed.
 *
 * What this cannot show: that an API server accepts the objects (the server-side dry run against
 * the test control plane does that) or that a network plugin enforces the policies.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';

const root = path.resolve(import.meta.dirname, '../..');
const base = path.join(root, 'deploy/kubernetes');
const hasKubectl = spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; [key: string]: any };

/** What a v1.20 API server serves for each kind the base may hold (autoscaling/v2 is 1.23+, policy/v1 1.21+). */
const SERVED_BY_1_20: Record<string, string[]> = {
  Namespace: ['v1'],
  ServiceAccount: ['v1'],
  Service: ['v1'],
  ConfigMap: ['v1'],
  Secret: ['v1'],
  Endpoints: ['v1'],
  Deployment: ['apps/v1'],
  Role: ['rbac.authorization.k8s.io/v1'],
  RoleBinding: ['rbac.authorization.k8s.io/v1'],
  NetworkPolicy: ['networking.k8s.io/v1'],
  HorizontalPodAutoscaler: ['autoscaling/v1', 'autoscaling/v2beta1', 'autoscaling/v2beta2'],
  PodDisruptionBudget: ['policy/v1beta1'],
  RuntimeClass: ['node.k8s.io/v1', 'node.k8s.io/v1beta1'],
};
const CLUSTER_SCOPED = new Set(['Namespace', 'RuntimeClass']);

let objects: Obj[] = [];
const find = (kind: string, name: string, namespace?: string): Obj => {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name === name && (namespace === undefined || o.metadata.namespace === namespace));
  expect(found, `${kind} ${namespace ?? ''}/${name}`).toHaveLength(1);
  return found[0]!;
};

beforeAll(() => {
  if (!hasKubectl) return;
  const rendered = execFileSync('kubectl', ['kustomize', base], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  objects = parseAllDocuments(rendered).map((doc) => {
    expect(doc.errors).toEqual([]);
    return doc.toJS() as Obj;
  });
});

// ---- NetworkPolicy semantics, as the API documents them, for the matrix below ---------------

type Labels = Record<string, string>;
/** A pod (namespace and labels) or something outside the cluster (`external`). */
type Endpoint = { namespace: string; labels: Labels } | { external: true };
type Selector = { matchLabels?: Labels; matchExpressions?: unknown[] };

const matches = (selector: Selector | undefined, labels: Labels): boolean => {
  if (!selector) return false;
  if (selector.matchExpressions?.length) throw new Error('matchExpressions: not modelled by this test');
  return Object.entries(selector.matchLabels ?? {}).every(([key, value]) => labels[key] === value);
};

function namespaceLabels(name: string): Labels {
  const namespace = objects.find((o) => o.kind === 'Namespace' && o.metadata.name === name);
  // Every namespace carries its name as the API server sets it from 1.21 on (on 1.20 the operator
  // labels kube-system, docs/deployment.md); ours carry our labels besides.
  return { 'kubernetes.io/metadata.name': name, ...namespace?.metadata.labels };
}

/** Does a `from`/`to` peer of a policy in `policyNamespace` select `who`? */
function peerSelects(peer: any, policyNamespace: string, who: Endpoint): boolean {
  if (peer.ipBlock) throw new Error('ipBlock: not modelled by this test');
  if ('external' in who) return false;
  const inNamespace = peer.namespaceSelector ? matches(peer.namespaceSelector, namespaceLabels(who.namespace)) : who.namespace === policyNamespace;
  const podMatches = peer.podSelector ? matches(peer.podSelector, who.labels) : true;
  return inNamespace && podMatches;
}

function portMatches(ports: any[] | undefined, port: number, protocol: string): boolean {
  if (!ports || ports.length === 0) return true;
  return ports.some((p) => {
    if (typeof p.port === 'string') throw new Error('named ports: not modelled by this test');
    return (p.protocol ?? 'TCP') === protocol && (p.port === undefined || p.port === port);
  });
}

function policyTypes(policy: Obj): string[] {
  return policy.spec.policyTypes ?? (policy.spec.egress ? ['Ingress', 'Egress'] : ['Ingress']);
}

/** One direction: is `pod` isolated for it, and if so does a rule of a policy selecting it admit `peer`? */
function side(direction: 'Ingress' | 'Egress', pod: Endpoint, peer: Endpoint, port: number, protocol: string): boolean {
  if ('external' in pod) return true; // nothing outside the cluster is governed here
  const policies = objects.filter(
    (o) =>
      o.kind === 'NetworkPolicy' && o.metadata.namespace === pod.namespace && matches(o.spec.podSelector, pod.labels) && policyTypes(o).includes(direction),
  );
  if (policies.length === 0) return true; // not isolated in this direction
  const key = direction === 'Ingress' ? 'ingress' : 'egress';
  const peersKey = direction === 'Ingress' ? 'from' : 'to';
  return policies.some((policy) =>
    (policy.spec[key] ?? []).some(
      (rule: any) =>
        portMatches(rule.ports, port, protocol) &&
        (!rule[peersKey] || rule[peersKey].length === 0 || rule[peersKey].some((selector: any) => peerSelects(selector, pod.namespace, peer))),
    ),
  );
}

/** A connection from `source` to `destination` on port/protocol: allowed by the source's egress and the destination's ingress. */
const allowed = (source: Endpoint, destination: Endpoint, port: number, protocol = 'TCP'): boolean =>
  side('Egress', source, destination, port, protocol) && side('Ingress', destination, source, port, protocol);

const account: Endpoint = { namespace: 'agent-accounts', labels: { 'app.kubernetes.io/name': 'account', 'app.kubernetes.io/part-of': 'agent-accounts' } };
const agent: Endpoint = {
  namespace: 'agents',
  labels: {
    'app.kubernetes.io/name': 'agent',
    'app.kubernetes.io/part-of': 'agent-accounts',
    'agent-accounts.dev/agent-id': 'a1',
    'agent-accounts.dev/user-id': 'u1',
  },
};
const otherAgent: Endpoint = { ...agent, labels: { ...agent.labels, 'agent-accounts.dev/agent-id': 'a2', 'agent-accounts.dev/user-id': 'u2' } };
const strayInAgents: Endpoint = { namespace: 'agents', labels: { app: 'debug' } };
const strayInAccounts: Endpoint = { namespace: 'agent-accounts', labels: { app: 'debug' } };
/** Pods elsewhere that wear our labels: the namespace label is what must keep them out. */
const fakeAccount: Endpoint = { namespace: 'tenant', labels: { 'app.kubernetes.io/name': 'account' } };
const fakeAgent: Endpoint = { namespace: 'tenant', labels: { 'app.kubernetes.io/name': 'agent' } };
const dns: Endpoint = { namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } };
/** A resolver of someone else's: any namespace's pod can wear the kube-dns label. */
const fakeDns: Endpoint = { namespace: 'tenant', labels: { 'k8s-app': 'kube-dns' } };
const otherSystemPod: Endpoint = { namespace: 'kube-system', labels: { component: 'metrics-server' } };
const internet: Endpoint = { external: true };

describe.skipIf(!hasKubectl)('deploy/kubernetes (kubectl kustomize)', () => {
  it('renders the objects of the base and nothing else', () => {
    const names = objects.map((o) => `${o.kind} ${o.metadata.namespace ?? '-'}/${o.metadata.name.replace(/^(account-config)-[a-z0-9]+$/, '$1-<hash>')}`).sort();
    expect(names).toEqual(
      [
        'Namespace -/agent-accounts',
        'Namespace -/agents',
        'ServiceAccount agent-accounts/account',
        'Deployment agent-accounts/account',
        'ConfigMap agent-accounts/account-config-<hash>',
        'Service agent-accounts/account',
        'Service agent-accounts/account-egress',
        'Service agent-accounts/postgres',
        'Service agent-accounts/redis',
        'HorizontalPodAutoscaler agent-accounts/account',
        'PodDisruptionBudget agent-accounts/account',
        'Role agents/agent-provisioner',
        'RoleBinding agents/agent-provisioner',
        'NetworkPolicy agents/default-deny',
        'NetworkPolicy agents/agent-ingress-from-account',
        'NetworkPolicy agents/agent-egress',
        'NetworkPolicy agent-accounts/default-deny-ingress',
        'NetworkPolicy agent-accounts/account-ingress',
        'RuntimeClass -/gvisor',
      ].sort(),
    );
  });

  it('uses only apiVersions a v1.20 API server serves', () => {
    for (const o of objects) expect(SERVED_BY_1_20[o.kind] ?? [], `${o.kind} ${o.metadata.name}: ${o.apiVersion}`).toContain(o.apiVersion);
    expect(find('HorizontalPodAutoscaler', 'account').apiVersion).toBe('autoscaling/v2beta2');
    expect(find('PodDisruptionBudget', 'account').apiVersion).toBe('policy/v1beta1');
    // Every namespaced object names its namespace (there are two; no default applies).
    for (const o of objects)
      if (!CLUSTER_SCOPED.has(o.kind)) expect(['agent-accounts', 'agents'], `${o.kind} ${o.metadata.name}`).toContain(o.metadata.namespace);
    // Namespaces are selected by our own labels, kube-system alone by the name label the API server sets (1.21+).
    const byName = objects.filter((o) => JSON.stringify(o).includes('kubernetes.io/metadata.name'));
    expect(byName.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['NetworkPolicy/agent-egress']);
    expect(JSON.stringify(byName[0])).toContain('"kubernetes.io/metadata.name":"kube-system"');
  });

  it('gives the provisioner a least-privilege Role in `agents` and nothing cluster-wide', () => {
    expect(objects.filter((o) => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding')).toEqual([]);
    const role = find('Role', 'agent-provisioner', 'agents');
    const rules = (role.rules as any[]).map((rule) => {
      expect(Object.keys(rule).sort(), 'no resourceNames or nonResourceURLs').toEqual(['apiGroups', 'resources', 'verbs']);
      expect(rule.apiGroups).toHaveLength(1);
      expect(rule.resources).toHaveLength(1);
      return `${rule.apiGroups[0] || 'core'}/${rule.resources[0]}: ${[...rule.verbs].sort().join(',')}`;
    });
    expect(rules.sort()).toEqual(
      [
        'apps/statefulsets: create,delete,get,list,patch,watch',
        'core/services: create,delete,get,list',
        'core/secrets: create,delete,get,list,patch',
        'core/persistentvolumeclaims: create,delete,get,list',
        'core/pods: get,list,watch',
      ].sort(),
    );
    expect(JSON.stringify(role.rules)).not.toContain('*');

    const binding = find('RoleBinding', 'agent-provisioner', 'agents');
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'agent-provisioner' });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'account', namespace: 'agent-accounts' }]);
    // The subject is the account's own ServiceAccount, whose token the account pods mount.
    const serviceAccount = find('ServiceAccount', 'account', 'agent-accounts');
    expect(serviceAccount.automountServiceAccountToken).toBe(true);
    const pod = find('Deployment', 'account', 'agent-accounts').spec.template.spec;
    expect(pod.serviceAccountName).toBe('account');
    expect(pod.automountServiceAccountToken).toBe(true);
  });

  it('enforces the `restricted` Pod Security profile in `agents` (and warns and audits with it)', () => {
    expect(find('Namespace', 'agents').metadata.labels).toMatchObject({
      'pod-security.kubernetes.io/enforce': 'restricted',
      'pod-security.kubernetes.io/warn': 'restricted',
      'pod-security.kubernetes.io/audit': 'restricted',
    });
  });

  it('denies everything in `agents` by default', () => {
    const deny = find('NetworkPolicy', 'default-deny', 'agents');
    expect(deny.spec.podSelector).toEqual({});
    expect([...deny.spec.policyTypes].sort()).toEqual(['Egress', 'Ingress']);
    expect(deny.spec.ingress ?? []).toEqual([]);
    expect(deny.spec.egress ?? []).toEqual([]);
    // Any pod in `agents`, labelled or not, is isolated both ways.
    expect(allowed(account, strayInAgents, 8080)).toBe(false);
    expect(allowed(strayInAgents, internet, 443)).toBe(false);
    expect(allowed(strayInAgents, dns, 53, 'UDP')).toBe(false);
    expect(allowed(strayInAccounts, agent, 8080)).toBe(false);
  });

  it('lets agents be reached only by the account pods, on 8080', () => {
    expect(allowed(account, agent, 8080)).toBe(true);
    expect(allowed(account, agent, 8080, 'UDP')).toBe(false);
    expect(allowed(account, agent, 3100)).toBe(false);
    expect(allowed(account, agent, 22)).toBe(false);
    expect(allowed(otherAgent, agent, 8080)).toBe(false);
    expect(allowed(strayInAgents, agent, 8080)).toBe(false);
    expect(allowed(strayInAccounts, agent, 8080)).toBe(false);
    expect(allowed(fakeAccount, agent, 8080)).toBe(false);
    expect(allowed(otherSystemPod, agent, 8080)).toBe(false);
    expect(allowed(internet, agent, 8080)).toBe(false);
  });

  it('lets agents reach only the egress gateway on 8081 and DNS', () => {
    expect(allowed(agent, account, 8081)).toBe(true);
    expect(allowed(agent, dns, 53, 'UDP')).toBe(true);
    expect(allowed(agent, dns, 53, 'TCP')).toBe(true);
    expect(allowed(agent, account, 3000)).toBe(false);
    expect(allowed(agent, account, 8081, 'UDP')).toBe(false);
    expect(allowed(agent, otherAgent, 8080)).toBe(false);
    expect(allowed(agent, fakeAccount, 8081)).toBe(false);
    expect(allowed(agent, dns, 8080)).toBe(false);
    // DNS in kube-system only: a pod labelled kube-dns elsewhere gets nothing from an agent.
    expect(allowed(agent, fakeDns, 53, 'UDP')).toBe(false);
    expect(allowed(agent, fakeDns, 53, 'TCP')).toBe(false);
    expect(allowed(agent, otherSystemPod, 443)).toBe(false);
    expect(allowed(agent, strayInAccounts, 8081)).toBe(false);
    // The internet, the API server, PostgreSQL and Redis outside the cluster.
    expect(allowed(agent, internet, 443)).toBe(false);
    expect(allowed(agent, internet, 5432)).toBe(false);
  });

  it('opens the account pods on 3000 to anyone and on 8081 to agents only', () => {
    expect(allowed(internet, account, 3000)).toBe(true);
    expect(allowed(otherSystemPod, account, 3000)).toBe(true);
    expect(allowed(internet, account, 8081)).toBe(false);
    expect(allowed(fakeAgent, account, 8081)).toBe(false);
    expect(allowed(strayInAgents, account, 8081)).toBe(false);
    expect(allowed(strayInAccounts, account, 8081)).toBe(false);
    expect(allowed(internet, account, 9229)).toBe(false);
    expect(allowed(internet, strayInAccounts, 3000)).toBe(false);
    // The account's own egress is open: the database, Redis, the API server, the providers.
    expect(allowed(account, internet, 5432)).toBe(true);
    expect(allowed(account, internet, 443)).toBe(true);
  });

  it('runs the account Deployment locked down, wired to what the base defines', () => {
    const deployment = find('Deployment', 'account', 'agent-accounts');
    expect(deployment.metadata.labels).toMatchObject({ 'app.kubernetes.io/name': 'account', 'app.kubernetes.io/part-of': 'agent-accounts' });
    expect(deployment.spec.replicas).toBe(2);
    const pod = deployment.spec.template.spec;
    expect(matches(deployment.spec.selector, deployment.spec.template.metadata.labels)).toBe(true);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.hostNetwork ?? false).toBe(false);
    expect(pod.hostPID ?? false).toBe(false);
    expect(pod.containers).toHaveLength(1);
    const container = pod.containers[0];
    expect(container.image).toBe('agent-accounts/account:latest');
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(container.securityContext.capabilities.add ?? []).toEqual([]);
    expect(container.securityContext.privileged ?? false).toBe(false);
    for (const kind of ['requests', 'limits']) expect(Object.keys(container.resources[kind]).sort(), kind).toEqual(['cpu', 'memory']);

    const ports = Object.fromEntries(container.ports.map((p: any) => [p.name, p.containerPort]));
    expect(ports).toEqual({ http: 3000, egress: 8081 });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });

    const env = Object.fromEntries(container.env.map((e: any) => [e.name, e]));
    expect(Object.fromEntries(Object.entries(env).flatMap(([name, e]: [string, any]) => (e.value === undefined ? [] : [[name, e.value]])))).toMatchObject({
      AGENT_PROVISIONER: 'kubernetes',
      KUBE_NAMESPACE: 'agents',
      KUBE_AGENT_IMAGE: 'agent-accounts/agent:latest',
      KUBE_EGRESS_URL: 'http://account-egress.agent-accounts.svc:8081',
      KUBE_EGRESS_PORT: '8081',
      KUBE_RUNTIME_CLASS: 'gvisor',
      HOST: '0.0.0.0',
      PORT: '3000',
    });
    // The namespace the provisioner is given is the one its Role is in; the runtime class exists.
    expect(find('Role', 'agent-provisioner').metadata.namespace).toBe(env.KUBE_NAMESPACE.value);
    expect(find('RuntimeClass', env.KUBE_RUNTIME_CLASS.value).handler).toBe('runsc');
    // The egress URL names the egress Service, whose port leads to the container's egress port.
    const egress = find('Service', 'account-egress', 'agent-accounts');
    expect(egress.spec.type).toBe('ClusterIP');
    expect(egress.spec.ports).toEqual([{ name: 'egress', protocol: 'TCP', port: 8081, targetPort: 'egress' }]);
    expect(matches({ matchLabels: egress.spec.selector }, deployment.spec.template.metadata.labels)).toBe(true);
    const http = find('Service', 'account', 'agent-accounts');
    expect(http.spec.ports).toEqual([{ name: 'http', protocol: 'TCP', port: 80, targetPort: 'http' }]);
    expect(matches({ matchLabels: http.spec.selector }, deployment.spec.template.metadata.labels)).toBe(true);

    // Required secrets come from `account-secrets`; the site settings from the generated ConfigMap.
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'AGENT_SECRETS_KEY']) {
      expect(env[name].valueFrom.secretKeyRef, name).toEqual({ name: 'account-secrets', key: name });
    }
    const configMap = container.envFrom[0].configMapRef.name;
    expect(find('ConfigMap', configMap, 'agent-accounts').data).toMatchObject({ KUBE_WORKSPACE_SIZE: '1Gi' });

    // The only writable paths are volumes: DATA_DIR and /tmp are emptyDirs; the shared keys are the Secret's.
    const volumes = Object.fromEntries(pod.volumes.map((v: any) => [v.name, v]));
    const mounts = Object.fromEntries(container.volumeMounts.map((m: any) => [m.mountPath, m]));
    expect(volumes[mounts[env.DATA_DIR.value].name].emptyDir).toBeDefined();
    expect(volumes[mounts['/tmp'].name].emptyDir).toBeDefined();
    const keys = volumes[mounts[path.dirname(env.SIGNING_KEYS_FILE.value)].name];
    expect(keys.secret.secretName).toBe('account-secrets');
    expect(keys.secret.items.map((item: any) => item.key).sort()).toEqual(['email-code-key', 'signing-keys.json']);
    expect(mounts[`${env.DATA_DIR.value}/email-code-key`]).toMatchObject({ name: keys.name, subPath: 'email-code-key', readOnly: true });
  });

  it('scales the account between 2 and 10 replicas on CPU and keeps one through disruptions', () => {
    const hpa = find('HorizontalPodAutoscaler', 'account', 'agent-accounts');
    expect(hpa.spec).toEqual({
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'account' },
      minReplicas: 2,
      maxReplicas: 10,
      metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }],
    });
    const pdb = find('PodDisruptionBudget', 'account', 'agent-accounts');
    expect(pdb.spec.minAvailable).toBe(1);
    expect(matches(pdb.spec.selector, find('Deployment', 'account').spec.template.metadata.labels)).toBe(true);
  });

  it('names PostgreSQL and Redis as external services', () => {
    for (const name of ['postgres', 'redis']) {
      const service = find('Service', name, 'agent-accounts');
      expect(service.spec.type).toBe('ExternalName');
      expect(service.spec.externalName).toMatch(/\.example\.internal$/);
    }
  });

  it('renders no Secret and commits none with real values', () => {
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    // A secret setting is never an inline value of the Deployment or the ConfigMap.
    const secretName = /(SECRET|TOKEN|PASSWORD|_KEY$|^DATABASE_URL$|^REDIS_URL$|^SMTP_URL$)/;
    const container = find('Deployment', 'account').spec.template.spec.containers[0];
    for (const e of container.env) if (secretName.test(e.name)) expect(e.value, e.name).toBeUndefined();
    for (const o of objects.filter((x) => x.kind === 'ConfigMap')) expect(Object.keys(o.data).filter((k) => secretName.test(k))).toEqual([]);
    // The example stays out of the kustomization and holds placeholders only.
    const kustomization = parse(readFileSync(path.join(base, 'kustomization.yaml'), 'utf8'));
    expect(JSON.stringify(kustomization)).not.toContain('example');
    const example = parse(readFileSync(path.join(base, 'account-secrets.example.yaml'), 'utf8'));
    expect(example.kind).toBe('Secret');
    expect(example.data).toBeUndefined();
    for (const [key, value] of Object.entries(example.stringData as Record<string, string>)) expect(value, key).toContain('CHANGE-ME');
  });
});
