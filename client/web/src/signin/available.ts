/**
 * Which sign-in methods this deployment offers (`GET /auth/methods`), asked once per page load:
 * the page never shows a provider whose settings are missing.
 */
import { api } from '../api.js';

export type MethodId = 'email' | 'idpa' | 'idpb' | 'wallet' | 'passkey' | 'guest';

let offered: Promise<Set<MethodId>> | undefined;

export function offeredMethods(): Promise<Set<MethodId>> {
  // On failure every method stays: a button that then explains is better than none.
  offered ??= api.auth.methods.list.query().then(
    ({ methods }) => new Set(methods),
    () => new Set<MethodId>(['email', 'idpa', 'idpb', 'wallet', 'passkey', 'guest']),
  );
  return offered;
}

/** Removes `el` once the methods are known, unless `available` says it stays. */
export function keepIf(el: HTMLElement, available: (methods: Set<MethodId>) => boolean): HTMLElement {
  void offeredMethods().then((methods) => {
    if (!available(methods)) el.remove();
  });
  return el;
}
