/**
 * The settings of an account service whose agents run on the test control plane: the kubernetes
 * provisioner with `kubeconfig` (the account's service-account token), the agents' namespace,
 * this repository's agent as the container's command (the test kubelet's "image"), and the egress
 * gateway on the namespace's node address, where the pods reach it.
 */
import { freePort } from '../../../server/common/net.js';
import { KUBE_NODE_ADDRESS } from './netns.js';

export async function kubeAccountEnv(opts: { kubeconfig: string; namespace: string; modelSpec: string }): Promise<Record<string, string>> {
  const egressPort = await freePort();
  return {
    AGENT_PROVISIONER: 'kubernetes',
    KUBE_CONFIG: opts.kubeconfig,
    KUBE_NAMESPACE: opts.namespace,
    KUBE_AGENT_COMMAND: JSON.stringify(['node', '/app/dist/agent/boot.cjs']),
    KUBE_EGRESS_URL: `http://${KUBE_NODE_ADDRESS}:${egressPort}`,
    KUBE_EGRESS_HOST: KUBE_NODE_ADDRESS,
    KUBE_EGRESS_PORT: String(egressPort),
    AGENT_IDLE_TIMEOUT: '0',
    AGENT_STOP_GRACE: '1',
    MODEL: opts.modelSpec,
  };
}
