/**
 * Whether this process runs inside the kube suite's private network namespace
 * (scripts/kube/in-netns.sh): 10.244.0.1 is then one of its own addresses. The kube test files
 * skip outside it, since the control plane and the pods need those addresses and nothing may be
 * sent to 10.0.0.0/8 on the host's network.
 */
import { networkInterfaces } from 'node:os';

export const KUBE_NODE_ADDRESS = '10.244.0.1';

export function inKubeNetns(): boolean {
  return Object.values(networkInterfaces()).some((addrs) => addrs?.some((a) => a.family === 'IPv4' && a.address === KUBE_NODE_ADDRESS));
}

/** The reason a kube test file gives when it skips (for describe.skipIf titles and logs). */
export const KUBE_NETNS_SKIP_REASON =
  'kube suite: not inside the private network namespace (10.244.0.1 is not a local address); run `npm run test:kube` (scripts/kube/in-netns.sh)';
