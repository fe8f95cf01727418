/**
 * The kube test harness itself, against a real control plane (test/support/kube/): etcd,
 * kube-apiserver and kube-controller-manager v1.20.2, and the test kubelet running pods under
 * bubblewrap. Runs only inside scripts/kube/in-netns.sh (`npm run test:kube`).
 */
import * as k8s from '@kubernetes/client-node';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeApi, KubeApiError, corePath } from '../support/kube/api.js';
import type { ControlPlane } from '../support/kube/cluster.js';
import { eventually, startKubelet, type TestKubelet } from '../support/kube/kubelet.js';
import { inKubeNetns, KUBE_NETNS_SKIP_REASON } from '../support/kube/netns.js';
import { sharedControlPlane } from '../support/kube/shared.js';

const inside = inKubeNetns();
const suite = inside ? describe : describe.skip;

function http(method: string, url: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent: false, timeout: 5_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: timeout`)));
    req.on('error', reject);
    req.end(body);
  });
}

suite(inside ? 'kube test harness (control plane + test kubelet)' : `kube test harness — skipped: ${KUBE_NETNS_SKIP_REASON}`, () => {
  let cp: ControlPlane;
  let kubelet: TestKubelet;
  let core: k8s.CoreV1Api;
  let apps: k8s.AppsV1Api;
  const ns = `harness-${Date.now().toString(36)}`;

  beforeAll(async () => {
    // The run's control plane (test/support/kube/global-setup.ts), a kubelet of this file's own.
    cp = sharedControlPlane();
    kubelet = await startKubelet({ cluster: cp, namespaces: [ns] });
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
    apps = kc.makeApiClient(k8s.AppsV1Api);
    await core.createNamespace({ body: { metadata: { name: ns } } });
  }, 90_000);

  afterAll(async () => {
    await kubelet?.stop();
    await cp?.stop();
  });

  const readyPod = async (name: string) => {
    try {
      return await eventually(`pod ${name} Ready`, async () => {
        const pod = await core.readNamespacedPod({ name, namespace: ns }).catch(() => undefined);
        const ready = pod?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
        return ready && pod?.status?.podIP ? pod : undefined;
      });
    } catch (err) {
      const pod = await cp.api.getOrUndefined(corePath(ns, 'pods', name));
      throw new Error(
        `${(err as Error).message}\npod status: ${JSON.stringify(pod?.status)}\nkubelet errors: ${kubelet.errors().join('; ')}\nlogs: ${kubelet.logs(ns, name)}`,
      );
    }
  };

  it('runs a StatefulSet pod with a PVC: Ready, in its headless Service, serving, data kept across scale 0 → 1, SIGTERM on deletion', async () => {
    await core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: { clusterIP: 'None', selector: { app: 'web' }, ports: [{ name: 'http', port: 8080 }] },
      },
    });
    await apps.createNamespacedStatefulSet({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: {
          serviceName: 'web',
          replicas: 1,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: {
              terminationGracePeriodSeconds: 5,
              containers: [
                {
                  name: 'web',
                  image: 'agent-accounts-test',
                  command: ['node', '/app/test/kube/fixtures/web.mjs'],
                  env: [
                    { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
                    { name: 'PORT', value: '8080' },
                    { name: 'DATA_DIR', value: '/data/$(PORT)' },
                    { name: 'TERM_DELAY_MS', value: '200' },
                  ],
                  ports: [{ name: 'http', containerPort: 8080 }],
                  readinessProbe: { httpGet: { path: '/health', port: 'http' }, periodSeconds: 1 },
                  volumeMounts: [{ name: 'data', mountPath: '/data' }],
                },
              ],
            },
          },
          volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Mi' } } } }],
        },
      },
    });

    const pod = await readyPod('web-0');
    const ip = pod.status!.podIP!;
    expect(kubelet.pod(ns, 'web-0')?.ip).toBe(ip);
    expect(pod.spec?.nodeName).toBe(kubelet.nodeName);
    const pvc = await core.readNamespacedPersistentVolumeClaim({ name: 'data-web-0', namespace: ns });
    expect(pvc.status?.phase).toBe('Bound');

    // The Endpoints controller lists the ready pod under the headless Service.
    await eventually('the pod IP in the Endpoints of web', async () => {
      const ep = await core.readNamespacedEndpoints({ name: 'web', namespace: ns });
      return ep.subsets?.some((s) => s.addresses?.some((a) => a.ip === ip && a.targetRef?.name === 'web-0'));
    });

    // The pod answers on its own IP, and writes into its volume ($(PORT) expanded in DATA_DIR).
    const base = `http://${ip}:8080`;
    const who = JSON.parse((await http('GET', `${base}/whoami`)).body);
    expect(who).toMatchObject({ hostname: 'web-0', podIP: ip, pid: 1 });
    expect((await http('PUT', `${base}/files/hello`, 'world')).status).toBe(204);
    expect((await http('GET', `${base}/files/hello`)).body).toBe('world');

    // Scale to 0: the pod is deleted with its grace period (the server gets SIGTERM), the PVC stays.
    await apps.replaceNamespacedStatefulSetScale({ name: 'web', namespace: ns, body: { metadata: { name: 'web', namespace: ns }, spec: { replicas: 0 } } });
    await eventually('web-0 gone', async () => {
      const gone = await core.readNamespacedPod({ name: 'web-0', namespace: ns }).then(
        () => false,
        () => true,
      );
      return gone && kubelet.pod(ns, 'web-0') === undefined;
    });
    await expect(http('GET', `${base}/health`)).rejects.toThrow();

    // Back to 1: a new pod (new uid) on the same claim finds the file, and the SIGTERM marker.
    await apps.replaceNamespacedStatefulSetScale({ name: 'web', namespace: ns, body: { metadata: { name: 'web', namespace: ns }, spec: { replicas: 1 } } });
    const again = await readyPod('web-0');
    expect(again.metadata?.uid).not.toBe(pod.metadata?.uid);
    const base2 = `http://${again.status!.podIP}:8080`;
    expect((await http('GET', `${base2}/files/hello`)).body).toBe('world');
    expect((await http('GET', `${base2}/files/sigterm-web-0`)).status).toBe(200);
    expect(kubelet.errors()).toEqual([]);
  });

  it('restarts a crashed container with backoff and reports restartCount and lastState', async () => {
    const before = kubelet.pod(ns, 'web-0');
    expect(before?.containers[0]?.pid).toBeGreaterThan(1);
    expect(kubelet.kill(ns, 'web-0')).toBe(true);
    const pod = await eventually('web-0 restarted and Ready again', async () => {
      const p = await core.readNamespacedPod({ name: 'web-0', namespace: ns });
      const cs = p.status?.containerStatuses?.[0];
      return cs?.restartCount === 1 && cs.ready && cs.state?.running ? p : undefined;
    });
    const cs = pod.status!.containerStatuses![0]!;
    expect(cs.lastState?.terminated?.exitCode).toBe(137);
    expect(kubelet.pod(ns, 'web-0')?.containers[0]?.pid).not.toBe(before?.containers[0]?.pid);
    expect((await http('GET', `http://${pod.status!.podIP}:8080/files/hello`)).body).toBe('world');
  });

  it('kills a pod that ignores SIGTERM once its grace period is over, then removes it', async () => {
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'stubborn' },
        spec: {
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 30,
          containers: [{ name: 'sh', image: 'agent-accounts-test', command: ['sh', '-c', 'trap "" TERM; while :; do sleep 1; done'] }],
        },
      },
    });
    await readyPod('stubborn');
    const started = Date.now();
    await core.deleteNamespacedPod({ name: 'stubborn', namespace: ns, gracePeriodSeconds: 2 });
    await eventually('stubborn gone', async () => {
      try {
        await cp.api.get(corePath(ns, 'pods', 'stubborn'));
        return false;
      } catch (err) {
        return err instanceof KubeApiError && err.status === 404;
      }
    });
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(1_900);
    expect(took).toBeLessThan(10_000);
    expect(kubelet.pod(ns, 'stubborn')).toBeUndefined();
  });

  it('gives a service account a token that RBAC holds to its Role', async () => {
    const token = await cp.tokenFor(ns, 'provisioner');
    const asSa = new KubeApi({ server: cp.server, ca: cp.ca, token });
    try {
      const denied = await asSa.get(corePath(ns, 'pods')).then(
        () => 0,
        (err) => (err instanceof KubeApiError ? err.status : -1),
      );
      expect(denied).toBe(403);
      await cp.api.post(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
        metadata: { name: 'pod-reader' },
        rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }],
      });
      await cp.api.post(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
        metadata: { name: 'provisioner-pod-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'provisioner', namespace: ns }],
      });
      const list = await eventually('the RoleBinding in effect', () => asSa.get(corePath(ns, 'pods')).catch(() => undefined));
      expect(list.items.length).toBeGreaterThan(0);
      const otherNs = await asSa.get(corePath('default', 'pods')).then(
        () => 0,
        (err) => (err instanceof KubeApiError ? err.status : -1),
      );
      expect(otherNs).toBe(403);
      // The kubeconfig written for the token works with @kubernetes/client-node too.
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(await cp.writeKubeconfig(token, 'provisioner'));
      const pods = await kc.makeApiClient(k8s.CoreV1Api).listNamespacedPod({ namespace: ns });
      expect(pods.items.map((p) => p.metadata?.name)).toContain('web-0');
      expect(pods.items.every((p) => p.spec?.nodeName === kubelet.nodeName)).toBe(true);
    } finally {
      asSa.close();
    }
  });
});
