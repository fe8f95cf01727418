/**
 * vitest globalSetup of the `kube` project: one control plane for every test file of the run
 * (starting one costs 7–15 s on a loaded machine), reached from test files with
 * sharedControlPlane() (test/support/kube/shared.ts). Each file then runs its own test kubelet
 * over namespaces of its own (startKubelet({ namespaces })). Outside the kube network namespace it
 * starts nothing and the kube test files skip.
 */
import type { TestProject } from 'vitest/node';
import { type ControlPlaneInfo, startControlPlane } from './cluster.js';
import { inKubeNetns } from './netns.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeControlPlane: ControlPlaneInfo | null;
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (!inKubeNetns()) {
    project.provide('kubeControlPlane', null);
    return undefined;
  }
  const cp = await startControlPlane();
  project.provide('kubeControlPlane', cp.info);
  return () => cp.stop();
}
