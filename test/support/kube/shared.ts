/**
 * The control plane that the kube project's globalSetup (test/support/kube/global-setup.ts)
 * started for the whole run. Use one namespace (or more) of your own per test file, and a test
 * kubelet limited to them: `startKubelet({ cluster, namespaces: [ns] })`.
 */
import { inject } from 'vitest';
import { type ControlPlane, connectControlPlane } from './cluster.js';

export function sharedControlPlane(): ControlPlane {
  const info = inject('kubeControlPlane');
  if (!info) throw new Error('no shared control plane: kube test files run in the kube project inside its network namespace (npm run test:kube)');
  return connectControlPlane(info);
}
